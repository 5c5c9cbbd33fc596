"""The render stage: validated Experiments -> the generated files under argo/.

`plan_repository` validates a repository's specs and plans its render; `plan_render` plans for
given Experiments against the committed files; `write.apply_plan` writes a plan atomically;
`drift_problems` says what a plan would change, as `tfgen check` reports it; a `Memory`
(`remembering`) keeps, in the cache, the spec verdicts and which experiments' files are known
to be in sync. Behind them:
chart values (`values`), the generated-file format (`generated`) and the argo/ wiring (`argo`).
"""

from .insync import Memory, remembering
from .plan import (
    Committed,
    RenderPlan,
    drift_problems,
    plan_render,
    plan_repository,
    remembered_plan,
)
from .write import ApplyResult, apply_plan

__all__ = [
    "ApplyResult",
    "Committed",
    "Memory",
    "RenderPlan",
    "apply_plan",
    "drift_problems",
    "plan_render",
    "plan_repository",
    "remembered_plan",
    "remembering",
]
