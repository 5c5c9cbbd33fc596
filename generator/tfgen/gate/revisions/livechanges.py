"""What a started run's rendered objects cannot take: each change between an experiment's
objects at the base revision and now that Kubernetes, the job's runtime or Kueue would refuse
or silently ignore, as an `Immutable` (the object, the field, its whole old and new value).

A PV's volume source and a bound PVC's spec are immutable. What a started training job cannot
take its runtime says (`Runtime.live_changes`, in `repo/runtimes`): what its API refuses, or
what its controller stores and never acts on. On every runtime, Kueue reads the queue and
priority labels when it admits the workload, and switching the runtime deletes the live job and
starts another. `immutability.py` traces each change back to the spec field that made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...problems import Problem
from ...repo import chart, runtimes
from ...repo.runtimes import Runtime
from ...repo.runtimes.changes import (
    ABSENT,
    LiveChange,
    aligned,
    change_text,
    changed_keys,
    full,
    leaf_changes,
)
from ..documents.manifests import RenderedObject

__all__ = ["ABSENT", "NEW_RUN_HINT", "Immutable", "full", "immutability_changes"]

NEW_RUN_HINT = (
    "a started run cannot take this change: leave it as it was and start a new run, "
    "`tfgen rerun {name} --as NEW`, then make the change there"
)


@dataclass(frozen=True, eq=False)  # each one itself: its values may be lists
class Immutable:
    """A change to a rendered object a live run cannot take: the object, the field, the
    sentence that explains it, the field's old and new value (ABSENT: not there), why a live
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
        return change_text(self.old, self.new)

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
# The labels Kueue reads of a job when it admits its workload, and what each names.
_KUEUE_LABELS = {chart.KUEUE_QUEUE_LABEL: "queue", chart.KUEUE_PRIORITY_LABEL: "priority"}
_KUEUE_WHY = ("Kueue reads the queue and priority when it admits the workload; a running "
              "workload is not moved")


def _runtime(obj: RenderedObject) -> Runtime | None:
    return runtimes.of_object(obj.api_version, obj.kind)


def immutability_changes(
    base: Sequence[RenderedObject], now: Sequence[RenderedObject]
) -> list[Immutable]:
    """Changes between the experiment at the base revision and now that a live run cannot take.

    Kubernetes rejects changes to a PV's volume source and to a bound PVC's spec (except its
    requested size). A started job takes what its runtime says it does (see the module's
    words); a job of another runtime than the live one's is a new run.
    """
    out = _runtime_switches(base, now)
    old_by_kind: dict[str, list[RenderedObject]] = {}
    for obj in base:
        old_by_kind.setdefault(obj.kind, []).append(obj)
    names_now = {(o.kind, o.name) for o in now}
    runs_kept = _runs_kept(base, names_now)
    for obj in now:
        olds = old_by_kind.get(obj.kind) or []
        old = next((o for o in olds if o.name == obj.name), None)
        if old is not None:
            out += _changes(old, obj)
        elif _renamed(obj, olds, runs_kept):
            out.append(_rename(obj, olds, names_now))
    return out


def _runs_kept(base: Sequence[RenderedObject], names_now: set[tuple[str, str]]) -> bool:
    """Whether every live job is still rendered. A sweep that gains runs renders new jobs next
    to its live ones: that is new training, not a change. A new job name while a live one is
    gone is a renamed run."""
    return all((o.kind, o.name) in names_now for o in base if _runtime(o))


def _renamed(obj: RenderedObject, olds: list[RenderedObject], runs_kept: bool) -> bool:
    """Whether a new object of a kind the base had is the base's renamed: a volume, a claim,
    or a job while one of the live jobs is gone."""
    if not olds or obj.kind not in _RENAMED_KINDS:
        return False
    return not (_runtime(obj) and runs_kept)


def _rename(obj: RenderedObject, olds: list[RenderedObject], names_now: set[tuple[str, str]]
            ) -> Immutable:
    """A renamed object, said with the name it had (of a sweep's runs, one that is gone)."""
    was = next((o.name for o in olds if (o.kind, o.name) not in names_now), olds[0].name)
    return Immutable(obj.ref, RENAMED, f"{obj.kind} was {was!r} at the base revision "
                     f"and is {obj.name!r} now", was, obj.name, "a renamed object is another one",
                     obj.ref)


# The pointer of a renamed object's change (`sweeps` says a sweep's renamed runs itself).
RENAMED = "$.metadata.name"
# The kinds of a run whose new name, while the old one is gone, is a renamed run.
_RENAMED_KINDS = runtimes.JOB_KINDS | {chart.VOLUME, chart.CLAIM}


def _runtime_switches(base: Sequence[RenderedObject], now: Sequence[RenderedObject]
                      ) -> list[Immutable]:
    """Each job now of another runtime than the live ones: the live job would be deleted and
    another started. That alone is said of it (every field of the other kind differs)."""
    live = [runtime for runtime in map(_runtime, base) if runtime is not None]
    out = []
    for obj in now:
        runtime = _runtime(obj)
        if live and runtime is not None and runtime not in live:
            was = live[0]  # an experiment's runs share its one runtime
            why = (f"the {was.kind} would be deleted and a {runtime.kind} started: that is a "
                   "new run")
            out.append(Immutable(obj.ref, "$.kind", f"the runtime changed from {was.name} to "
                                 f"{runtime.name}; {why}", was.name, runtime.name, why, obj.ref))
    return out


def _changes(old: RenderedObject, obj: RenderedObject) -> list[Immutable]:
    """What changed in one object, kept under its name, that a live run cannot take."""
    if obj.namespace != old.namespace and obj.kind != chart.VOLUME:
        return [Immutable(obj.ref, "$.metadata.namespace",
                          f"namespace changed from {old.namespace!r} to {obj.namespace!r}",
                          old.namespace, obj.namespace, "an object cannot change namespace",
                          obj.ref)]
    new_doc = aligned(old.doc, obj.doc)  # what the server would store alike is no change
    old_spec, new_spec = old.doc.get("spec") or {}, new_doc.get("spec") or {}
    runtime = _runtime(obj)
    if runtime is not None:
        return _kueue_changes(old, obj) + [
            _of_job(obj, change) for change in runtime.live_changes(old.doc, new_doc)]
    if obj.kind not in _STORAGE_IMMUTABLE:
        return []
    mutable, message, why = _STORAGE_IMMUTABLE[obj.kind]
    return [Immutable(obj.ref, where, f"{message.format(change=change_text(a, b))}; {why}",
                      a, b, why, obj.ref)
            for key in changed_keys(old_spec, new_spec, mutable)
            for where, a, b in leaf_changes(old_spec.get(key, ABSENT),
                                            new_spec.get(key, ABSENT), f"$.spec.{key}")]


def _of_job(obj: RenderedObject, change: LiveChange) -> Immutable:
    """A change the runtime found in a started job, said of the job (and of its role)."""
    part = obj.ref if change.role is None else f"{obj.ref} {change.role}"
    return Immutable(obj.ref, change.pointer, change.message, change.old, change.new,
                     change.why, part)


def _labels(obj: RenderedObject) -> dict[str, Any]:
    meta = obj.doc.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _kueue_changes(old: RenderedObject, obj: RenderedObject) -> list[Immutable]:
    """A started job's queue or priority: Kueue admitted its workload by them."""
    before, after = _labels(old), _labels(obj)
    out = []
    for label, what in _KUEUE_LABELS.items():
        a, b = before.get(label, ABSENT), after.get(label, ABSENT)
        if a != b:
            out.append(Immutable(obj.ref, f"$.metadata.labels[{label!r}]",
                                 f"the {what} changed ({change_text(a, b)}); {_KUEUE_WHY}",
                                 a, b, _KUEUE_WHY, obj.ref))
    return out
