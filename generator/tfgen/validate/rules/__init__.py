"""What the schema cannot say of one experiment: its roles, storage and names (`spec`), what
the API server refuses (`api`), its runtime and queue (`runtime`), the nodes that can hold its
pods (`capacity`), and the size of the values file it makes (`valuesfile`).
"""
