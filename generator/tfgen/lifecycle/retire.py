"""`tfgen retire`: retire an experiment in Git, or remove it once retired.

Retiring sets `spec.lifecycle: retired` in the spec's text (comments kept): the chart then
renders only the volume and claim, so Argo CD prunes the TFJob, the TensorBoard (unless
`tensorboard.keep`) and the NetworkPolicies while the data stays bound. `--delete` removes the
spec and its generated folder; the Application is deleted by hand after the merge, in the
order argo/README.md ("Removing an experiment") explains.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OptionsError
from ..render import apply_plan, plan_repository
from ..render.write import blocked_paths, replace_file
from ..repo import chart, layout
from ..repo.files import read_input
from ..validate.config import load_config
from .edit import TextEdit, compose, find

# Where the order of a removal and what happens to the data are explained, once.
REMOVAL_DOC = "argo/README.md (Removing an experiment)"


@dataclass
class Retired:
    """What a retire did: the spec (as shown), whether it changed, what was removed, and
    whether argo/ was rendered again (else the user is told to)."""

    name: str
    path: str
    changed: bool
    removed: list[str] = field(default_factory=list)
    rendered: bool = False


def retire_experiment(argument: str, *, delete: bool = False, cwd: Path | None = None) -> Retired:
    """Set spec.lifecycle: retired in the spec (idempotent), or with `delete` remove the spec
    and its generated folder and render argo/ again."""
    config = load_config(cwd=cwd)
    if config.path is None:
        raise OptionsError(f"{(cwd or Path.cwd()).resolve()}: not inside a tfgen repository")
    path = layout.experiment_path(argument, cwd)
    rel = layout.spec_in_repository(config.root, path, argument)
    path, shown = config.root / rel, rel
    name = path.name.rpartition(".")[0]
    text = read_input(path, shown, config.root).decode("utf-8")
    if delete:
        return _delete(config.root, path, shown, name)
    spec = find(compose(text, shown), ("spec",))
    if spec is None:
        raise OptionsError(f"{shown}: no spec to retire; fix it first (`tfgen validate`)")
    current = find(spec, ("lifecycle",))
    if current is not None and getattr(current, "value", None) == chart.RETIRED:
        return Retired(name, shown, changed=False)
    edit = TextEdit(text)
    edit.set_in_mapping(spec, chart.LIFECYCLE_KEY, chart.RETIRED, shown)
    replace_file(path, edit.apply())
    return Retired(name, shown, changed=True)


def _delete(root: Path, path: Path, shown: str, name: str) -> Retired:
    result = Retired(name, shown, changed=True, removed=[shown])
    generated = layout.generated_folder(name)
    # every path the removal touches, checked before the first is removed: never half-retired
    blocked = blocked_paths(root, [shown], folders=[generated])
    if blocked:
        raise OptionsError(f"nothing removed: {'; '.join(blocked)}; tfgen removes only the "
                           "spec and the folder it generated (remove the link or file by hand)")
    os.unlink(path)
    folder = root / generated
    if folder.is_dir():
        shutil.rmtree(folder)
        result.removed.append(layout.shown(folder, root) + "/")
    plan, problems = plan_repository(root)
    if plan is not None and not problems and not plan.problems:
        apply_plan(plan, prune=True)
        result.rendered = True
    return result


def delete_command(name: str) -> str:
    """The command that removes the Application (and, cascading, its objects but the kept
    PV and PVC) after the merge."""
    return f"argocd app delete {name} --cascade"
