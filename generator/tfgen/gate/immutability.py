"""Live-run immutability (`tfgen check --base`): what a running experiment cannot take.

A change between the experiment at the base revision (what runs in the cluster) and now that
Kubernetes would refuse (a PV's volume source, a bound PVC's spec) or that the training
operator would silently ignore (replica specs, scheduling, namespace) must become a new run
under a new name (`tfgen rerun`). Both sides are rendered by the real helm, through the same
batch renderer. Each change found in the rendered objects is then traced back to the spec
field that made it (the spec at the base against the spec now), so it is reported once, at
that field's line, with its whole old and new value, however many replica types it touched.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..problems import Problem
from ..repo import chart, layout
from ..validate.document import PointerParts, pointer_text
from ..validate.loader import load_file
from . import base
from .applications import resolve_applications
from .batch import BatchRenderer, jobs_for
from .manifests import RenderedObject, parse_manifest
from .objects import AppObjects, app_is_retired

NEW_RUN_HINT = (
    "a started run cannot take this change: leave it as it was and start a new run, "
    "`tfgen rerun {name} --as NEW`, then make the change there"
)


@dataclass(frozen=True, eq=False)  # each one itself: its values may be lists
class Immutable:
    """A change to a rendered object a live run cannot take: the object, the field, the
    sentence that explains it, the field's old and new value (_ABSENT: not there), why a live
    run cannot take it, and what it touches in short (`TFJob/x Worker`)."""

    ref: str
    pointer: str
    message: str
    old: Any
    new: Any
    why: str = ""
    part: str = ""

    @property
    def change(self) -> str:
        """`"old" -> "new"`, both whole."""
        return _change_text(self.old, self.new)

    def problem(self, path: str, name: str) -> Problem:
        return Problem(path=path, pointer=f"{self.ref} {self.pointer}", message=self.message,
                       hint=NEW_RUN_HINT.format(name=name))

_PV_MUTABLE = {"capacity", "accessModes", "mountOptions", "storageClassName",
               "persistentVolumeReclaimPolicy", "claimRef", "nodeAffinity"}
_PVC_MUTABLE = {"resources", "volumeAttributesClassName"}
# kind -> (spec keys a live object takes, what to say about a change to any other, why)
_STORAGE_IMMUTABLE = {
    chart.VOLUME: (
        _PV_MUTABLE, "the volume source changed ({change})",
        "a PV's source (server, path, driver) is immutable",
    ),
    chart.CLAIM: (
        _PVC_MUTABLE, "changed ({change})", "a bound claim's spec is immutable except its size",
    ),
}
# runPolicy fields the operator reads continuously; everything else is read once at start.
_RUN_POLICY_LIVE = {"suspend", "activeDeadlineSeconds", "backoffLimit", "cleanPodPolicy"}


def _changed_keys(old: dict[str, Any], new: dict[str, Any], mutable: set[str]) -> list[str]:
    keys = (set(old) | set(new)) - mutable
    return sorted(k for k in keys if old.get(k) != new.get(k))


_ABSENT = object()


def _leaf_changes(old: Any, new: Any, pointer: str, limit: int = 5
                  ) -> list[tuple[str, Any, Any]]:
    """(pointer, old, new) for the innermost fields that differ, so a message names
    `$.spec.csi.volumeAttributes.path` rather than the whole volume source."""
    out: list[tuple[str, Any, Any]] = []
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key, _ABSENT), new.get(key, _ABSENT)
            if a != b:
                out += _leaf_changes(a, b, f"{pointer}.{key}", limit)
    elif (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
          and any(isinstance(x, (dict, list)) for x in old)):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                out += _leaf_changes(a, b, f"{pointer}[{index}]", limit)
    else:
        out.append((pointer, old, new))
    return out[:limit]


def immutability_changes(
    base: Sequence[RenderedObject], now: Sequence[RenderedObject]
) -> list[Immutable]:
    """Changes between the experiment at the base revision and now that a live run cannot take.

    Kubernetes rejects changes to a PV's volume source and to a bound PVC's spec (except its
    requested size). The training operator reads a TFJob's replica specs and scheduling policy
    only when the job starts: a change is stored but never acted on, so the run in the cluster
    would silently differ from Git.
    """
    out: list[Immutable] = []
    old_by_kind: dict[str, list[RenderedObject]] = {}
    for obj in base:
        old_by_kind.setdefault(obj.kind, []).append(obj)
    names_now = {(o.kind, o.name) for o in now}
    # A sweep that gains runs renders new TFJobs next to its live ones: that is new training,
    # not a change. A new TFJob name while a live one is gone is a renamed run.
    runs_kept = all((o.kind, o.name) in names_now for o in old_by_kind.get(chart.TFJOB[1], []))
    for obj in now:
        olds = old_by_kind.get(obj.kind) or []
        old = next((o for o in olds if o.name == obj.name), None)
        if old is not None:
            out += _changes(old, obj)
        elif olds and obj.kind in _RENAMED_KINDS and not (obj.kind == chart.TFJOB[1]
                                                          and runs_kept):
            out.append(Immutable(obj.ref, "$.metadata.name",
                                 f"{obj.kind} was {olds[0].name!r} at the base revision and "
                                 f"is {obj.name!r} now", olds[0].name, obj.name,
                                 "a renamed object is another one", obj.ref))
    return out


# The kinds of a run whose new name, while the old one is gone, is a renamed run.
_RENAMED_KINDS = (chart.TFJOB[1], chart.VOLUME, chart.CLAIM)


def _changes(old: RenderedObject, obj: RenderedObject) -> list[Immutable]:
    """What changed in one object, kept under its name, that a live run cannot take."""
    if obj.namespace != old.namespace and obj.kind != chart.VOLUME:
        return [Immutable(obj.ref, "$.metadata.namespace",
                          f"namespace changed from {old.namespace!r} to {obj.namespace!r}",
                          old.namespace, obj.namespace, "an object cannot change namespace",
                          obj.ref)]
    old_spec, new_spec = old.doc.get("spec") or {}, obj.doc.get("spec") or {}
    if (obj.api_version, obj.kind) == chart.TFJOB:
        return _tfjob_changes(old_spec, new_spec, obj)
    if obj.kind not in _STORAGE_IMMUTABLE:
        return []
    mutable, message, why = _STORAGE_IMMUTABLE[obj.kind]
    return [Immutable(obj.ref, where, f"{message.format(change=_change_text(a, b))}; {why}",
                      a, b, why, obj.ref)
            for key in _changed_keys(old_spec, new_spec, mutable)
            for where, a, b in _leaf_changes(old_spec.get(key, _ABSENT),
                                             new_spec.get(key, _ABSENT), f"$.spec.{key}")]


def _tfjob_changes(old: dict[str, Any], new: dict[str, Any], obj: RenderedObject
                   ) -> list[Immutable]:
    out = []
    old_r, new_r = old.get("tfReplicaSpecs") or {}, new.get("tfReplicaSpecs") or {}
    for rtype in sorted(set(old_r) | set(new_r)):
        before, after = old_r.get(rtype), new_r.get(rtype)
        where = f"$.spec.tfReplicaSpecs.{rtype}"
        if before is None or after is None:
            out.append(Immutable(obj.ref, where,
                                 f"replica type {rtype} {'added' if before is None else 'removed'}"
                                 " in a running TFJob (the operator does not re-read replica "
                                 "specs)", before or _ABSENT, after or _ABSENT,
                                 "the operator does not re-read replica specs",
                                 f"{obj.ref} {rtype}"))
            continue
        if before.get("replicas") != after.get("replicas"):
            out.append(Immutable(obj.ref, f"{where}.replicas",
                                 f"{rtype} replicas changed {before.get('replicas')} -> "
                                 f"{after.get('replicas')}; TF_CONFIG of running pods keeps the "
                                 f"old cluster", before.get("replicas"), after.get("replicas"),
                                 "TF_CONFIG of running pods keeps the old cluster",
                                 f"{obj.ref} {rtype}"))
        for key in sorted((set(before) | set(after)) - {"replicas"}):
            if before.get(key) != after.get(key):
                for pointer, a, b in _leaf_changes(before.get(key, _ABSENT),
                                                   after.get(key, _ABSENT), f"{where}.{key}"):
                    out.append(Immutable(obj.ref, pointer,
                                         f"{rtype} {key} changed ({_change_text(a, b)}); running "
                                         "pods are not recreated from a changed template", a, b,
                                         "running pods are not recreated from a changed "
                                         "template", f"{obj.ref} {rtype}"))
    old_p, new_p = old.get("runPolicy") or {}, new.get("runPolicy") or {}
    for key in _changed_keys(old_p, new_p, _RUN_POLICY_LIVE):
        out.append(Immutable(obj.ref, f"$.spec.runPolicy.{key}",
                             f"runPolicy.{key} changed; the operator reads it only when the job "
                             "starts", old_p.get(key, _ABSENT), new_p.get(key, _ABSENT),
                             "the operator reads it only when the job starts", obj.ref))
    return out


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


def _full(value: Any) -> str:
    """A value whole, as JSON writes it (never cut: the difference may be at its end)."""
    return "(absent)" if value is _ABSENT else json.dumps(value, ensure_ascii=False)


def _change_text(old: Any, new: Any) -> str:
    return f"{_full(old)} -> {_full(new)}"


def _spec_leaves(old: Any, new: Any, parts: PointerParts = ()
                 ) -> list[tuple[PointerParts, Any, Any]]:
    """The innermost fields of a spec that differ: (pointer parts, old, new)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [leaf for key in sorted(set(old) | set(new), key=str)
                if old.get(key, _ABSENT) != new.get(key, _ABSENT)
                for leaf in _spec_leaves(old.get(key, _ABSENT), new.get(key, _ABSENT),
                                         (*parts, key))]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [leaf for index, (a, b) in enumerate(zip(old, new, strict=True)) if a != b
                for leaf in _spec_leaves(a, b, (*parts, index))]
    return [(parts, old, new)]


def _shows(value: Any, rendered: Any) -> bool:
    """Whether a spec value (absent: anything) is to be seen in a rendered value."""
    if value is _ABSENT:
        return True
    text = value if isinstance(value, str) else json.dumps(value)
    return text in (rendered if isinstance(rendered, str) else _full(rendered))


def located(changes: Sequence[Immutable], spec_path: str, old_spec: Any, name: str
            ) -> list[Problem]:
    """The changes as problems: each spec field whose old and new value the rendered
    changes show, once, at its line in the spec with both values whole (naming the objects
    it changes); a rendered change no spec field explains (tfgen.yaml, the chart), as itself."""
    try:
        document = load_file(spec_path)
    except InputError:
        return [change.problem(spec_path, name) for change in changes]
    leaves = _spec_leaves(old_spec, document.data)
    out, explained = [], set()
    for parts, old, new in leaves:
        touched = [c for c in changes if _shows(old, c.old) and _shows(new, c.new)]
        if not touched or parts[:1] not in (("spec",), ("metadata",)):
            continue
        explained.update(touched)
        line, col = document.locate(parts)
        why = "; ".join(dict.fromkeys(c.why for c in touched))
        parts_touched = ", ".join(dict.fromkeys(c.part for c in touched))
        out.append(Problem(spec_path, line, col, pointer=pointer_text(parts),
                           message=f"changed from {_full(old)} to {_full(new)}, which a "
                           f"started run cannot take: {why} ({parts_touched})",
                           hint=NEW_RUN_HINT.format(name=name)))
    rest = {(c.ref, c.pointer, c.message): c for c in changes if c not in explained}
    return out + [c.problem(spec_path, name) for c in rest.values()]


def base_problems(
    root: Path, ref: str, rendered: Sequence[AppObjects], kube_version: str,
    renderer: BatchRenderer,
) -> list[Problem]:
    """Live-run immutability of every rendered experiment against itself at `ref`.

    The repository at `ref` is resolved and rendered exactly like the working tree. An
    experiment that `ref` does not render (new, or `ref` predates tfgen) has nothing live to
    protect; every other failure is reported, never taken for "nothing to check".
    """
    now = {item.app.name: item for item in rendered}
    with base.tree_at(root, ref) as tree:
        before_apps = {a.name: a for a in resolve_applications(tree).applications}
        pairs = [(before_apps[name], now[name]) for name in now if name in before_apps]
        out = [_unretired(current) for before, current in pairs
               if app_is_retired(before) and not app_is_retired(current.app)]
        results = renderer.render(jobs_for([b for b, _ in pairs], kube_version))
        for (_, current), before in zip(pairs, results, strict=True):
            if before.error or before.manifest == current.manifest:
                continue  # an experiment that did not render at the base was not running
            try:
                old_objects = parse_manifest(before.manifest)
            except InputError:
                continue  # the same: what the base rendered could not have been applied
            changes = immutability_changes(old_objects, current.objects)
            if changes:
                out += located(changes, current.path, _spec_at(tree, root, current.path),
                               current.app.name)
    return out


def _spec_at(tree: Path, root: Path, shown: str) -> Any:
    """The spec file `shown` as the base revision (exported to `tree`) had it; None when it
    had none or it does not read."""
    rel = layout.relative(root, Path(shown).resolve())
    try:
        return load_file(tree / rel).data
    except (InputError, OSError):
        return None
