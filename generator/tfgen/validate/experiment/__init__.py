"""One experiment as every rule reads it: its checked data and the rules' vocabulary
(`checked`), and its runs, one per combination of a sweep (`sweep`).
"""
