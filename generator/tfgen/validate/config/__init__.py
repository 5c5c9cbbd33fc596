"""tfgen.yaml: read like a spec (`load`), and the rules its schema cannot say (`rules`).
"""
