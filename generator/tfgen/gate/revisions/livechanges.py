"""What a started run's rendered objects cannot take: each change between an experiment's
objects at the base revision and now that Kubernetes, the job's runtime or Kueue would refuse
or silently ignore, as an `Immutable` (the object, the field, its whole old and new value).

A PV's volume source and a bound PVC's spec are immutable. A training job is asked of its
runtime (`repo/runtimes`): a runtime whose API refuses every change to a started job's spec
but a few keys says which (`Runtime.mutable`); the training operator's TFJob, which stores a
change and never acts on it, is judged by the rules below, field by field. On every runtime,
Kueue reads the queue and priority labels when it admits the workload, and switching the
runtime deletes the live job and starts another. `immutability.py` traces each change back to
the spec field that made it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...problems import Problem
from ...repo import chart, runtimes
from ...repo.runtimes import Runtime
from ..documents.manifests import RenderedObject

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


ABSENT = object()  # a field not there


def full(value: Any) -> str:
    """A value whole, as JSON writes it (never cut: the difference may be at its end)."""
    return "(absent)" if value is ABSENT else json.dumps(value, ensure_ascii=False)


def change_text(old: Any, new: Any) -> str:
    return f"{full(old)} -> {full(new)}"


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
# TFJob runPolicy fields the operator reads continuously; everything else is read once at start.
_RUN_POLICY_LIVE = {"suspend", "activeDeadlineSeconds", "backoffLimit", "cleanPodPolicy"}
# The labels Kueue reads of a job when it admits its workload, and what each names.
_KUEUE_LABELS = {chart.KUEUE_QUEUE_LABEL: "queue", chart.KUEUE_PRIORITY_LABEL: "priority"}
_KUEUE_WHY = ("Kueue reads the queue and priority when it admits the workload; a running "
              "workload is not moved")
# At most this many changes are said of one object's part (a role, the rest): a chart or
# tfgen.yaml change can touch every field; the first ones are enough to find it.
_PER_PART = 5


def _changed_keys(old: dict[str, Any], new: dict[str, Any], mutable: set[str]) -> list[str]:
    keys = (set(old) | set(new)) - mutable
    return sorted(k for k in keys if old.get(k) != new.get(k))


def _leaf_changes(old: Any, new: Any, pointer: str, limit: int | None = _PER_PART
                  ) -> list[tuple[str, Any, Any]]:
    """(pointer, old, new) for the innermost fields that differ, so a message names
    `$.spec.csi.volumeAttributes.path` rather than the whole volume source."""
    out: list[tuple[str, Any, Any]] = []
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key, ABSENT), new.get(key, ABSENT)
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
    # A sweep that gains runs renders new jobs next to its live ones: that is new training,
    # not a change. A new job name while a live one is gone is a renamed run.
    runs_kept = all((o.kind, o.name) in names_now for o in base if _runtime(o))
    for obj in now:
        olds = old_by_kind.get(obj.kind) or []
        old = next((o for o in olds if o.name == obj.name), None)
        if old is not None:
            out += _changes(old, obj)
        elif olds and obj.kind in _RENAMED_KINDS and not (_runtime(obj) and runs_kept):
            # of a sweep's runs, name one that is gone
            was = next((o.name for o in olds if (o.kind, o.name) not in names_now), olds[0].name)
            out.append(Immutable(obj.ref, "$.metadata.name", f"{obj.kind} was {was!r} at the "
                                 f"base revision and is {obj.name!r} now", was, obj.name,
                                 "a renamed object is another one", obj.ref))
    return out


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
    old_spec, new_spec = old.doc.get("spec") or {}, obj.doc.get("spec") or {}
    runtime = _runtime(obj)
    if runtime is not None:
        return _kueue_changes(old, obj) + (
            _tfjob_changes(old_spec, new_spec, obj) if runtime.mutable is None
            else _started_job_changes(old, obj, runtime))
    if obj.kind not in _STORAGE_IMMUTABLE:
        return []
    mutable, message, why = _STORAGE_IMMUTABLE[obj.kind]
    return [Immutable(obj.ref, where, f"{message.format(change=change_text(a, b))}; {why}",
                      a, b, why, obj.ref)
            for key in _changed_keys(old_spec, new_spec, mutable)
            for where, a, b in _leaf_changes(old_spec.get(key, ABSENT),
                                             new_spec.get(key, ABSENT), f"$.spec.{key}")]


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


def _started_job_changes(old: RenderedObject, obj: RenderedObject, runtime: Runtime
                         ) -> list[Immutable]:
    """A job whose API refuses any change to its spec but the runtime's `mutable` keys, each
    change said of the role whose node holds it (`PodTemplate.role_pointer`)."""
    mutable = runtime.mutable or ()
    why = (f"a started {obj.kind} takes no change to its spec but {' and '.join(mutable)} "
           "(its API refuses the rest: field is immutable)")
    roles_old = {t.role_pointer: t.replica_type for t in runtime.pod_templates(old.doc)}
    roles_new = {t.role_pointer: t.replica_type for t in runtime.pod_templates(obj.doc)}
    out = _role_changes(roles_old, roles_new, obj, why)
    roles_changed, nodes = bool(out), roles_old | roles_new
    old_spec, new_spec = old.doc.get("spec") or {}, obj.doc.get("spec") or {}
    said: dict[str, int] = {}
    for key in _changed_keys(old_spec, new_spec, set(mutable)):
        for where, a, b in _leaf_changes(old_spec.get(key, ABSENT), new_spec.get(key, ABSENT),
                                         f"$.spec.{key}", limit=None):
            role = _role_at(where, nodes)
            if roles_changed and (role or any(_under(node, where) for node in nodes)):
                continue  # in or above the roles' nodes, once roles came or went: said above
            part = f"{obj.ref} {role}" if role else obj.ref
            said[part] = said.get(part, 0) + 1
            if said[part] <= _PER_PART:
                out.append(Immutable(obj.ref, where, f"{where.removeprefix('$.spec.')} changed "
                                     f"({change_text(a, b)}); {why}", a, b, why, part))
    return out


def _role_changes(roles_old: dict[str, str], roles_new: dict[str, str], obj: RenderedObject,
                  why: str) -> list[Immutable]:
    """Roles added to or removed from a started job (the others' nodes may shift with them:
    no change of theirs)."""
    where_old = {role: pointer for pointer, role in roles_old.items()}
    where_new = {role: pointer for pointer, role in roles_new.items()}
    return [Immutable(obj.ref, where_new.get(role) or where_old[role],
                      f"role {role} {'removed from' if role in where_old else 'added to'} a "
                      f"started {obj.kind}; {why}", role if role in where_old else ABSENT,
                      role if role in where_new else ABSENT, why, f"{obj.ref} {role}")
            for role in sorted(set(where_old) ^ set(where_new))]


def _under(pointer: str, parent: str) -> bool:
    """Whether `pointer` is `parent` or a field within it."""
    return pointer == parent or pointer.startswith((f"{parent}.", f"{parent}["))


def _role_at(pointer: str, roles: dict[str, str]) -> str | None:
    """The role whose node holds `pointer`, None outside every role's node."""
    return next((role for owner, role in roles.items() if _under(pointer, owner)), None)


def _tfjob_changes(old: dict[str, Any], new: dict[str, Any], obj: RenderedObject
                   ) -> list[Immutable]:
    """The training operator's TFJob (v1.9): it reads replica specs and the start-time run
    policy once, when the job starts; a change is stored but never acted on, so the run in
    the cluster would silently differ from Git."""
    out = []
    old_r, new_r = old.get("tfReplicaSpecs") or {}, new.get("tfReplicaSpecs") or {}
    for rtype in sorted(set(old_r) | set(new_r)):
        before, after = old_r.get(rtype), new_r.get(rtype)
        where = f"$.spec.tfReplicaSpecs.{rtype}"
        if before is None or after is None:
            out.append(Immutable(obj.ref, where,
                                 f"replica type {rtype} {'added' if before is None else 'removed'}"
                                 " in a running TFJob (the operator does not re-read replica "
                                 "specs)", before or ABSENT, after or ABSENT,
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
                for pointer, a, b in _leaf_changes(before.get(key, ABSENT),
                                                   after.get(key, ABSENT), f"{where}.{key}"):
                    out.append(Immutable(obj.ref, pointer,
                                         f"{rtype} {key} changed ({change_text(a, b)}); running "
                                         "pods are not recreated from a changed template", a, b,
                                         "running pods are not recreated from a changed "
                                         "template", f"{obj.ref} {rtype}"))
    old_p, new_p = old.get("runPolicy") or {}, new.get("runPolicy") or {}
    for key in _changed_keys(old_p, new_p, _RUN_POLICY_LIVE):
        out.append(Immutable(obj.ref, f"$.spec.runPolicy.{key}",
                             f"runPolicy.{key} changed; the operator reads it only when the job "
                             "starts", old_p.get(key, ABSENT), new_p.get(key, ABSENT),
                             "the operator reads it only when the job starts", obj.ref))
    return out
