"""Rules on rendered objects that a JSON Schema cannot express.

Three families, each returning `report.Problem`s located at the file a person should open and
pointing at `Kind/name $.path`:

- TFJob: every replica type runs a container named `tensorflow` (the training operator finds
  the port and injects TF_CONFIG by that name), at most one Chief/Master, no TF_CONFIG in the
  template (the operator owns it), no ttlSecondsAfterFinished (Argo CD self-heal would
  recreate the deleted TFJob and train again).
- Data safety: the NAS volume survives every GitOps action: PV Retain, PV and PVC both marked
  Prune=false/Delete=false (kept or deleted together), created in earlier sync waves than
  their users, no hooks and no other writer of the volume.
- Live-run immutability (`--base`): a change a running TFJob or a bound PV/PVC cannot take
  (PV source, PVC spec, replica specs, namespace) must become a new run under a new name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..problems import Problem
from .manifests import RenderedObject

TFJOB = ("kubeflow.org/v1", "TFJob")
REPLICA_TYPES = ("Chief", "Master", "Worker", "PS", "Evaluator")
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
KEEP_OPTIONS = ("Prune=false", "Delete=false")
HOOK_ANNOTATIONS = ("helm.sh/hook", "argocd.argoproj.io/hook")
NEW_RUN_HINT = (
    "a live run cannot take this change: start a new run under a new experiment name "
    "(copy the spec to experiments/<new-name>.yaml), and delete the old spec when done"
)
# Kinds that run containers and could therefore write to (or wipe) a mounted NAS volume.
WORKLOAD_KINDS = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
                  "CronJob", "ReplicationController"}


def _annotations(obj: RenderedObject) -> dict[str, Any]:
    meta = obj.doc.get("metadata") or {}
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    return ann if isinstance(ann, dict) else {}


def _problem(path: str, obj: RenderedObject, pointer: str, message: str, hint: str = "") -> Problem:
    return Problem(path=path, pointer=f"{obj.ref} {pointer}", message=message, hint=hint)


def _pod_specs(obj: RenderedObject) -> Iterable[tuple[str, dict[str, Any]]]:
    """(pointer, pod spec) of every pod template in a workload or TFJob."""
    spec = obj.doc.get("spec") or {}
    if not isinstance(spec, dict):
        return
    if (obj.api_version, obj.kind) == TFJOB:
        for rtype, replica in (spec.get("tfReplicaSpecs") or {}).items():
            pod = ((replica or {}).get("template") or {}).get("spec")
            if isinstance(pod, dict):
                yield f"$.spec.tfReplicaSpecs.{rtype}.template.spec", pod
    elif obj.kind == "Pod":
        yield "$.spec", spec
    elif obj.kind == "CronJob":
        pod = (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {})
        if isinstance(pod.get("spec"), dict):
            yield "$.spec.jobTemplate.spec.template.spec", pod["spec"]
    elif obj.kind in WORKLOAD_KINDS:
        pod = (spec.get("template") or {}).get("spec")
        if isinstance(pod, dict):
            yield "$.spec.template.spec", pod


# --- TFJob ------------------------------------------------------------------------------------

def tfjob_problems(obj: RenderedObject, path: str) -> list[Problem]:
    """Rules of training-operator v1.9 for one TFJob object."""
    if (obj.api_version, obj.kind) != TFJOB:
        return []
    out: list[Problem] = []
    if not DNS1035.match(obj.name) or len(obj.name) > 63:
        out.append(_problem(path, obj, "$.metadata.name",
                            f"TFJob name {obj.name!r} is not a DNS-1035 label",
                            "lower-case letters, digits and '-', starting with a letter"))
    spec = obj.doc.get("spec") or {}
    replicas = spec.get("tfReplicaSpecs") or {}
    if not isinstance(replicas, dict) or not replicas:
        out.append(_problem(path, obj, "$.spec.tfReplicaSpecs", "no replica specs"))
        return out
    leaders = [r for r in ("Chief", "Master") if r in replicas]
    if len(leaders) > 1:
        out.append(_problem(path, obj, "$.spec.tfReplicaSpecs",
                            "both Chief and Master are set; the operator allows one of them",
                            "keep one of Chief or Master"))
    for rtype, replica in replicas.items():
        where = f"$.spec.tfReplicaSpecs.{rtype}"
        if rtype not in REPLICA_TYPES:
            out.append(_problem(path, obj, where, f"unknown replica type {rtype!r}",
                                f"one of {', '.join(REPLICA_TYPES)}"))
        count = (replica or {}).get("replicas", 1)
        if rtype in ("Chief", "Master", "Evaluator") and isinstance(count, int) and count > 1:
            out.append(_problem(path, obj, f"{where}.replicas",
                                f"{rtype} has {count} replicas; the operator supports one",
                                "set replicas: 1"))
        pod = (((replica or {}).get("template") or {}).get("spec")) or {}
        containers = pod.get("containers") or []
        named = [c for c in containers if isinstance(c, dict) and c.get("name") == "tensorflow"]
        if not named:
            out.append(_problem(path, obj, f"{where}.template.spec.containers",
                                "no container named 'tensorflow' (the operator injects "
                                "TF_CONFIG and the port into that container only)",
                                "name the training container 'tensorflow'"))
        elif not named[0].get("image"):
            out.append(_problem(path, obj, f"{where}.template.spec.containers",
                                "container 'tensorflow' has no image"))
        for kind in ("initContainers", "containers"):
            for index, container in enumerate(pod.get(kind) or []):
                for env_index, env in enumerate((container or {}).get("env") or []):
                    if isinstance(env, dict) and env.get("name") == "TF_CONFIG":
                        out.append(_problem(
                            path, obj,
                            f"{where}.template.spec.{kind}[{index}].env[{env_index}]",
                            "TF_CONFIG is set in the template; the operator sets it per pod "
                            "and a fixed value breaks the cluster spec",
                            "remove TF_CONFIG"))
    run_policy = spec.get("runPolicy") or {}
    if isinstance(run_policy, dict) and "ttlSecondsAfterFinished" in run_policy:
        out.append(_problem(path, obj, "$.spec.runPolicy.ttlSecondsAfterFinished",
                            "ttlSecondsAfterFinished deletes the finished TFJob, and Argo CD "
                            "self-heal recreates it, which trains again",
                            "remove it; cleanPodPolicy frees the pods"))
    return out


# --- data safety ------------------------------------------------------------------------------

def _wave(obj: RenderedObject) -> int:
    try:
        return int(str(_annotations(obj).get(SYNC_WAVE, "0")))
    except ValueError:
        return 0


def _claims(pod: dict[str, Any]) -> dict[str, str]:
    """volume name -> claim name for the PVC volumes of a pod spec."""
    out = {}
    for volume in pod.get("volumes") or []:
        claim = (volume or {}).get("persistentVolumeClaim") or {}
        if claim.get("claimName"):
            out[str(volume.get("name"))] = str(claim["claimName"])
    return out


def data_safety_problems(objects: Sequence[RenderedObject], path: str) -> list[Problem]:
    """Rules that keep the NAS data of one experiment alive through every sync."""
    out: list[Problem] = []
    pvs = [o for o in objects if o.kind == "PersistentVolume"]
    pvcs = [o for o in objects if o.kind == "PersistentVolumeClaim"]
    for obj in objects:
        for key in HOOK_ANNOTATIONS:
            if key in _annotations(obj):
                out.append(_problem(path, obj, f"$.metadata.annotations[{key!r}]",
                                    "hooks are not allowed: a hook runs arbitrary work around "
                                    "every sync (and a PostSync hook waits for training to end)",
                                    "remove the hook annotation"))
        if obj.kind == "StorageClass":
            out.append(_problem(path, obj, "$.kind", "a StorageClass in an experiment could "
                                "provision (and delete) volumes dynamically",
                                "NAS volumes are static PVs; remove it"))
    for pv in pvs:
        spec = pv.doc.get("spec") or {}
        if spec.get("persistentVolumeReclaimPolicy") != "Retain":
            out.append(_problem(path, pv, "$.spec.persistentVolumeReclaimPolicy",
                                f"reclaim policy is {spec.get('persistentVolumeReclaimPolicy')!r}"
                                "; Delete/Recycle would wipe the NAS data with the volume",
                                "Retain"))
    for obj in pvs + pvcs:
        options = [o.strip() for o in str(_annotations(obj).get(SYNC_OPTIONS, "")).split(",")]
        missing = [o for o in KEEP_OPTIONS if o not in options]
        if missing:
            out.append(_problem(path, obj, f"$.metadata.annotations[{SYNC_OPTIONS!r}]",
                                f"missing {', '.join(missing)}: Argo CD could delete this "
                                f"{obj.kind} (PV and PVC are kept or deleted together)",
                                "Prune=false,Delete=false on both PV and PVC"))
    if bool(pvs) != bool(pvcs):
        lone = (pvs or pvcs)[0]
        out.append(_problem(path, lone, "$", f"{lone.kind} without its "
                            f"{'PersistentVolumeClaim' if pvs else 'PersistentVolume'}; the "
                            "static NAS binding needs both", "render both or neither"))
    storage_waves = [_wave(o) for o in pvs + pvcs]
    for obj in objects:
        if obj.kind in ("PersistentVolume", "PersistentVolumeClaim"):
            continue
        if storage_waves and _wave(obj) <= max(storage_waves):
            out.append(_problem(path, obj, f"$.metadata.annotations[{SYNC_WAVE!r}]",
                                f"sync wave {_wave(obj)} is not after the storage "
                                f"(PV/PVC waves {sorted(set(storage_waves))})",
                                "PV -2, PVC -1, everything else 0"))
    for pv in pvs:
        for pvc in pvcs:
            if _wave(pv) >= _wave(pvc):
                out.append(_problem(path, pv, f"$.metadata.annotations[{SYNC_WAVE!r}]",
                                    "the PV must sync in an earlier wave than its PVC",
                                    "PV -2, PVC -1"))
    # Only the TFJob trains (writes); anything else mounting the volume must do so read-only.
    for obj in objects:
        if (obj.api_version, obj.kind) == TFJOB or obj.kind not in WORKLOAD_KINDS:
            continue
        for where, pod in _pod_specs(obj):
            claims = _claims(pod)
            for kind in ("initContainers", "containers"):
                for index, container in enumerate(pod.get(kind) or []):
                    for mindex, mount in enumerate((container or {}).get("volumeMounts") or []):
                        if mount.get("name") in claims and not mount.get("readOnly"):
                            out.append(_problem(
                                path, obj, f"{where}.{kind}[{index}].volumeMounts[{mindex}]",
                                "mounts the experiment's volume writable; only the TFJob "
                                "writes to the NAS", "readOnly: true"))
    return out


# --- live-run immutability --------------------------------------------------------------------

_PV_MUTABLE = {"capacity", "accessModes", "mountOptions", "storageClassName",
               "persistentVolumeReclaimPolicy", "claimRef", "nodeAffinity"}
_PVC_MUTABLE = {"resources", "volumeAttributesClassName"}
# kind -> (spec keys a live object takes, what to say about a change to any other)
_STORAGE_IMMUTABLE = {
    "PersistentVolume": (
        _PV_MUTABLE,
        "the volume source changed ({change}); a PV's source (server, path, driver) is immutable",
    ),
    "PersistentVolumeClaim": (
        _PVC_MUTABLE,
        "changed ({change}); a bound claim's spec is immutable except its size",
    ),
}
# runPolicy fields the operator reads continuously; everything else is read once at start.
_RUN_POLICY_LIVE = {"suspend", "activeDeadlineSeconds", "backoffLimit", "cleanPodPolicy"}


def _changed_keys(old: dict[str, Any], new: dict[str, Any], mutable: set[str]) -> list[str]:
    keys = (set(old) | set(new)) - mutable
    return sorted(k for k in keys if old.get(k) != new.get(k))


_ABSENT = object()


def _leaf_changes(old: Any, new: Any, pointer: str, limit: int = 5) -> list[tuple[str, str]]:
    """(pointer, "old -> new") for the innermost fields that differ, so a message names
    `$.spec.csi.volumeAttributes.path` rather than the whole volume source."""
    out: list[tuple[str, str]] = []
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
        out.append((pointer, f"{_short(old)} -> {_short(new)}"))
    return out[:limit]


def immutability_problems(
    base: Sequence[RenderedObject], now: Sequence[RenderedObject], path: str
) -> list[Problem]:
    """Changes between the experiment at the base revision and now that a live run cannot take.

    Kubernetes rejects changes to a PV's volume source and to a bound PVC's spec (except its
    requested size). The training operator reads a TFJob's replica specs and scheduling policy
    only when the job starts: a change is stored but never acted on, so the run in the cluster
    would silently differ from Git.
    """
    out: list[Problem] = []
    old_by_kind: dict[str, list[RenderedObject]] = {}
    for obj in base:
        old_by_kind.setdefault(obj.kind, []).append(obj)
    for obj in now:
        olds = old_by_kind.get(obj.kind) or []
        if not olds:
            continue
        old = next((o for o in olds if o.name == obj.name), None)
        if obj.kind in ("TFJob", "PersistentVolume", "PersistentVolumeClaim") and old is None:
            out.append(_problem(path, obj, "$.metadata.name",
                                f"{obj.kind} was {olds[0].name!r} at the base revision and is "
                                f"{obj.name!r} now", NEW_RUN_HINT))
            continue
        if old is None:
            continue
        if obj.namespace != old.namespace and obj.kind != "PersistentVolume":
            out.append(_problem(path, obj, "$.metadata.namespace",
                                f"namespace changed from {old.namespace!r} to {obj.namespace!r}",
                                NEW_RUN_HINT))
            continue
        old_spec, new_spec = old.doc.get("spec") or {}, obj.doc.get("spec") or {}
        if obj.kind in _STORAGE_IMMUTABLE:
            mutable, message = _STORAGE_IMMUTABLE[obj.kind]
            for key in _changed_keys(old_spec, new_spec, mutable):
                for where, change in _leaf_changes(old_spec.get(key, _ABSENT),
                                                   new_spec.get(key, _ABSENT), f"$.spec.{key}"):
                    out.append(_problem(path, obj, where, message.format(change=change),
                                        NEW_RUN_HINT))
        elif (obj.api_version, obj.kind) == TFJOB:
            out += _tfjob_changes(old_spec, new_spec, obj, path)
    return out


def _tfjob_changes(
    old: dict[str, Any], new: dict[str, Any], obj: RenderedObject, path: str
) -> list[Problem]:
    out = []
    old_r, new_r = old.get("tfReplicaSpecs") or {}, new.get("tfReplicaSpecs") or {}
    for rtype in sorted(set(old_r) | set(new_r)):
        before, after = old_r.get(rtype), new_r.get(rtype)
        where = f"$.spec.tfReplicaSpecs.{rtype}"
        if before is None or after is None:
            out.append(_problem(path, obj, where,
                                f"replica type {rtype} {'added' if before is None else 'removed'}"
                                " in a running TFJob (the operator does not re-read replica "
                                "specs)", NEW_RUN_HINT))
            continue
        if before.get("replicas") != after.get("replicas"):
            out.append(_problem(path, obj, f"{where}.replicas",
                                f"{rtype} replicas changed {before.get('replicas')} -> "
                                f"{after.get('replicas')}; TF_CONFIG of running pods keeps the "
                                f"old cluster", NEW_RUN_HINT))
        for key in sorted((set(before) | set(after)) - {"replicas"}):
            if before.get(key) != after.get(key):
                for pointer, change in _leaf_changes(before.get(key, _ABSENT),
                                                     after.get(key, _ABSENT), f"{where}.{key}"):
                    out.append(_problem(path, obj, pointer,
                                        f"{rtype} {key} changed ({change}); running pods are "
                                        f"not recreated from a changed template", NEW_RUN_HINT))
    old_p, new_p = old.get("runPolicy") or {}, new.get("runPolicy") or {}
    for key in _changed_keys(old_p, new_p, _RUN_POLICY_LIVE):
        out.append(_problem(path, obj, f"$.spec.runPolicy.{key}",
                            f"runPolicy.{key} changed; the operator reads it only when the job "
                            f"starts", NEW_RUN_HINT))
    return out


def _short(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
