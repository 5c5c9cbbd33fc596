"""Live-run immutability (`tfgen check --base`): what a running experiment cannot take.

A change between the experiment at the base revision (what runs in the cluster) and now that
Kubernetes would refuse (a PV's volume source, a bound PVC's spec), that the job's runtime
refuses or ignores (a started JobSet's replicated jobs, a TFJob's replica specs), that Kueue
never re-reads (the queue, the priority), a switch of runtime, or a move to another cluster
(`moves.py`), must become a new run under a new name (`tfgen rerun`); `livechanges.py` finds
them. Both sides are rendered by the real helm, through the same batch renderer. Each change
found in the rendered objects is then traced back to the spec field that made it (the spec at
the base against the spec now), so it is reported once, at that field's line, with its whole
old and new value, however many replica types it touched.
"""

from __future__ import annotations

import contextlib
import functools
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...problems import Problem, errors_of
from ...repo import chart, layout
from ...validate.yaml.document import PointerParts, pointer_text
from ...validate.yaml.loader import load_file
from ..argo.applications import ResolvedApplication, resolve_applications
from ..documents.manifests import RenderedObject, parse_manifest
from ..helm.batch import BatchRenderer
from ..helm.jobs import job_for, jobs_for
from ..objects.verdict import AppObjects, app_is_retired
from . import base, moves
from .livechanges import (
    ABSENT,
    NEW_RUN_HINT,
    RENAMED,
    Immutable,
    full,
    immutability_changes,
)
from .sweeps import sweep_verdict

__all__ = ["as_rendered", "base_problems", "immutability_changes", "located", "refusals"]


def _unretired(current: AppObjects) -> Problem:
    """A retired run made active again would train anew over the old run's data and logs."""
    name = current.app.name
    line, col = 0, 0
    # The spec rendered, so it reads: point at its lifecycle field. Should it have become
    # unreadable since, the problem still names the file.
    with contextlib.suppress(InputError):
        line, col = load_file(current.path).locate(("spec", "lifecycle"), key=True)
    return Problem(current.path, line, col, pointer="$.spec.lifecycle",
                   message=f"{name} is {chart.RETIRED} at the base revision and "
                   f"{chart.ACTIVE} now; a retired run cannot train again (it would write "
                   "over the old run's checkpoints and event logs)",
                   hint=f"set spec.lifecycle back to {chart.RETIRED} and rerun it under a new "
                   f"name: `tfgen rerun {name} --as NEW`")


def _spec_leaves(old: Any, new: Any, parts: PointerParts = ()
                 ) -> list[tuple[PointerParts, Any, Any]]:
    """The innermost fields of a spec that differ: (pointer parts, old, new)."""
    entries = _side_by_side(old, new)
    if entries is None:
        return [(parts, old, new)]
    leaves = []
    for key, a, b in entries:
        if a != b:
            leaves += _spec_leaves(a, b, (*parts, key))
    return leaves


def _side_by_side(old: Any, new: Any) -> list[tuple[Any, Any, Any]] | None:
    """(key, old, new) of two mappings' entries, by key (ABSENT where one has none), or of
    two lists' items of one length, by position; None for values compared whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [(key, old.get(key, ABSENT), new.get(key, ABSENT))
                for key in sorted(set(old) | set(new), key=str)]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [(index, a, b) for index, (a, b) in enumerate(zip(old, new, strict=True))]
    return None


def _shows(value: Any, rendered: Any) -> bool:
    """Whether a spec value (absent: anything) is to be seen in a rendered value."""
    if value is ABSENT:
        return True
    text = value if isinstance(value, str) else json.dumps(value)
    return text in (rendered if isinstance(rendered, str) else full(rendered))


def located(changes: Sequence[Immutable], spec_path: str, old_spec: Any, name: str
            ) -> list[Problem]:
    """The changes as problems: each spec field whose old and new value the rendered
    changes show, once, at its line in the spec with both values whole (naming the objects
    it changes); a rendered change no spec field explains (tfgen.yaml, the chart), as itself,
    in an object no spec field's change refuses already."""
    try:
        document = load_file(spec_path)
    except InputError:
        return [change.problem(spec_path, name) for change in changes]
    leaves = _spec_leaves(old_spec, document.data)
    out, explained = [], set()
    for parts, old, new in leaves:
        touched = _showing(changes, old, new)
        if not touched or parts[:1] not in (("spec",), ("metadata",)):
            continue
        explained.update(touched)
        line, col = document.locate(parts)
        why = "; ".join(dict.fromkeys(c.why for c in touched))
        parts_touched = ", ".join(dict.fromkeys(c.part for c in touched))
        out.append(Problem(spec_path, line, col, pointer=pointer_text(parts),
                           message=f"changed from {full(old)} to {full(new)}, which a "
                           f"started run cannot take: {why} ({parts_touched})",
                           hint=NEW_RUN_HINT.format(name=name)))
    return out + _unexplained(changes, explained, spec_path, name)


def _showing(changes: Sequence[Immutable], old: Any, new: Any) -> list[Immutable]:
    """The rendered changes that show a spec field's old and new value (`_shows`)."""
    return [c for c in changes if _shows(old, c.old) and _shows(new, c.new)]


def _unexplained(changes: Sequence[Immutable], explained: set[Immutable], spec_path: str,
                 name: str) -> list[Problem]:
    """The rendered changes no spec field explains, each a problem of its own, in the objects
    no spec field's change refuses already."""
    # What no spec field explains in an object a spec field's change already refuses is that
    # change's consequence (a JobSet's TF_CONFIG, in every role, lists the workers a replicas
    # count names): the rerun the problem asks for takes it too.
    refused = {c.ref for c in explained}
    rest = {(c.ref, c.pointer, c.message): c for c in changes
            if c not in explained and c.ref not in refused}
    return [c.problem(spec_path, name) for c in rest.values()]


def base_problems(
    root: Path, ref: str, rendered: Sequence[AppObjects], kube_version: str,
    renderer: BatchRenderer, updates: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Live-run immutability of every rendered experiment against itself at `ref`.

    The repository at `ref` is resolved and rendered exactly like the working tree. An
    experiment that `ref` does not render (new, or `ref` predates tfgen) has nothing live to
    protect; every other failure is reported, never taken for "nothing to check". `updates`:
    what `tfgen render` would write, by repository-relative path (a stale app.yaml's cluster).
    """
    with base.tree_at(root, ref) as tree:
        pairs = _with_base_apps(tree, rendered)
        out = [_unretired(current) for before, current in pairs
               if app_is_retired(before) and not app_is_retired(current.app)]
        out += moves.move_problems(pairs, updates or {})
        results = renderer.render(jobs_for([b for b, _ in pairs], kube_version))
        for (_, current), before in zip(pairs, results, strict=True):
            if before.error or before.manifest == current.manifest:
                continue  # not running at the base, or nothing changed
            out += _judged(before.manifest, current.objects, current.path,
                           _spec_at(tree, root, current.path), current.app.name)
    return out


def _judged(before: str, now: Sequence[RenderedObject], spec_path: str, old_spec: Any,
            name: str) -> list[Problem]:
    """What a live experiment, rendered as `before` at the base, cannot take of its objects
    `now`: its sweep judged per parameter, then every other change at its spec field."""
    try:
        old_objects = parse_manifest(before)
    except InputError:
        return []  # what the base rendered could not have been applied: nothing was running
    runs = sweep_verdict(old_spec, spec_path, name)
    # a run the sweep's verdict accounts for (new, or replacing a live one): said there, once
    changes = [c for c in immutability_changes(old_objects, now)
               if not (c.pointer == RENAMED and c.new in runs.explained)]
    return runs.problems + (located(changes, spec_path, old_spec, name) if changes else [])


def refusals(before: str, after: str, spec_path: str, old_spec: Any, name: str
             ) -> list[Problem]:
    """What `tfgen check --base` refuses of one experiment that helm rendered as `before` at
    the base and as `after` now (its errors: a warning is no refusal), for `tfgen diff`, which
    has rendered both sides already."""
    try:
        now = parse_manifest(after)
    except InputError:
        return []  # cannot be applied: `tfgen diff` says helm's or the parser's problem
    return errors_of(_judged(before, now, spec_path, old_spec, name))


def as_rendered(rendered: Sequence[AppObjects], updates: Mapping[str, str], kube_version: str,
                renderer: BatchRenderer) -> list[AppObjects]:
    """The rendered experiments, each whose committed values file is stale rendered instead
    from what `tfgen render` would write there (`updates`, by repository-relative path): what
    will run once the files are rendered and committed, which the base is compared with."""
    stale = [(item, updates[rel]) for item in rendered
             if (rel := layout.generated_paths(item.app.name)[0]) in updates]
    if not stale:
        return list(rendered)
    with tempfile.TemporaryDirectory(prefix="tfgen-values-") as tmp:
        jobs = []
        for index, (item, text) in enumerate(stale):
            values = Path(tmp) / f"{index}.yaml"
            values.write_text(text, encoding="utf-8")
            committed = layout.generated_paths(item.app.name)[0]
            files = tuple(values if f.as_posix().endswith("/" + committed) else f
                          for f in item.app.value_files)
            jobs.append(job_for(item.app, kube_version, files))
        results = renderer.render(jobs)
    fresh = {item.app.name: replace(item, _load=functools.partial(str, result.manifest))
             for (item, _), result in zip(stale, results, strict=True) if not result.error}
    return [fresh.get(item.app.name, item) for item in rendered]


def _with_base_apps(tree: Path, rendered: Sequence[AppObjects]
                    ) -> list[tuple[ResolvedApplication, AppObjects]]:
    """Each experiment rendered now that the base (exported to `tree`) generates an
    Application for, with that Application."""
    now = {item.app.name: item for item in rendered}
    before_apps = {a.name: a for a in resolve_applications(tree).applications}
    return [(before_apps[name], now[name]) for name in now if name in before_apps]


def _spec_at(tree: Path, root: Path, shown: str) -> Any:
    """The spec file `shown` as the base revision (exported to `tree`) had it; None when it
    had none or it does not read."""
    rel = layout.relative(root, Path(shown).resolve())
    try:
        return load_file(tree / rel).data
    except (InputError, OSError):
        return None
