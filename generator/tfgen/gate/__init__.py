"""The gate: what Argo CD would do with the repository, offline, as problems.

Its ways in are `check.run_check` (`tfgen check`) and `diff.run_diff` (`tfgen diff`); they are
imported from their modules, so that commands that do not need the gate start without it.
"""

# How rendered objects are validated: builtin (the shipped schemas, compiled once),
# kubeconform, both; auto = both when kubeconform is on PATH, else builtin.
VALIDATORS = ("auto", "builtin", "kubeconform", "both")
# How `tfgen diff` prints: for a terminal, or as one pull-request comment.
DIFF_FORMATS = ("text", "markdown")
