"""What an experiment becomes in the cluster, and running it here.

Its ways in are `explain.explain_spec` (`tfgen explain`) and `runlocal.run_local`
(`tfgen run-local`); both take one spec through the validate and render stages and the real
helm, then read the TFJob as the training operator does (`tfconfig`).
"""

# How `tfgen explain` prints: a table with each pod's TF_CONFIG, JSON for tools, a Mermaid chart.
EXPLAIN_FORMATS = ("text", "json", "mermaid")
