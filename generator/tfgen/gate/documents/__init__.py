"""Rendered documents read as Kubernetes reads them and validated strictly: go-yaml v2's
reading (`kubeyaml`), the schemas of every kind (`manifests`), kubeconform as a second
validator (`kubeconform`).
"""

# How rendered objects are validated: builtin (the shipped schemas, compiled once),
# kubeconform, both; auto = both when kubeconform is on PATH, else builtin.
VALIDATORS = ("auto", "builtin", "kubeconform", "both")
