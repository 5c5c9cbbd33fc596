"""The gate: what Argo CD would do with the repository, offline, as problems.

Its ways in are `check.run_check` (`tfgen check`) and `diff.changes.run_diff` (`tfgen diff`);
they are imported from their modules, so that commands that do not need the gate start without
it. Each folder holds one concern, and each imports only those listed after it:
`diff/` (what a change does, object by object), `revisions/` (the base revision against now),
`objects/` (the verdict on what each experiment renders), `helm/` (the real helm, batched),
`argo/` (the Applications Argo CD generates, and whether they may sync) and `documents/`
(rendered documents read and validated strictly); `check`, `scope` and `ledger` sit on top.
"""
