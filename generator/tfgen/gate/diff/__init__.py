"""`tfgen diff`: what a change does in the cluster, object by object (`changes`), and how that
is shown (`report`).
"""

# How `tfgen diff` prints: for a terminal, or as one pull-request comment.
DIFF_FORMATS = ("text", "markdown")
