"""Rules on rendered objects that a JSON Schema cannot express.

Three families, each returning `Problem`s located at the file a person should open and
pointing at `Kind/name $.path`:

- The training job: its runtime's rules (`repo/runtimes/`): a container named `tensorflow` in
  every pod, an image in every container, at most one chief or master, TF_CONFIG as the
  training operator gives it, no ttlSecondsAfterFinished (Argo CD self-heal would recreate the
  deleted job and train again).
- Pod security: every pod template meets the Pod Security Standard level its namespace
  enforces, as tfgen.yaml declares it (the controls are in `validate.podsecurity`).
- Data safety: the NAS volume survives every GitOps action: PV Retain, PV and PVC both marked
  Prune=false/Delete=false (kept or deleted together), created in earlier sync waves than
  their users, no hooks and no other writer of the volume.

And one for every object: it fits what Argo CD's apply writes (`applied_size_problems`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ...problems import Problem
from ...repo import chart, naming, runtimes
from ...validate.policy import pods, podsecurity
from ..documents.manifests import RenderedObject

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
KEEP_OPTIONS = ("Prune=false", "Delete=false")
HOOK_ANNOTATIONS = ("helm.sh/hook", "argocd.argoproj.io/hook")
# Kinds that run containers and could therefore write to (or wipe) a mounted NAS volume.
WORKLOAD_KINDS = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
                  "CronJob", "ReplicationController"}
# Argo CD applies client-side, as `kubectl apply` does: the whole object, as compact JSON, goes
# into its kubectl.kubernetes.io/last-applied-configuration annotation, and the API server
# refuses an object whose annotations total more than naming.MAX_ANNOTATIONS_BYTES. What Argo
# CD adds (that annotation's key, its tracking id) and Go's escaping of `<`, `>` and `&` stay
# within this margin for tfgen's objects.
APPLIED_MARGIN = 4096
# What spares writing an object's JSON to measure it: a document whose text writes out every
# value it holds (`RenderedObject.text_length`: no alias repeats one, no tag makes one) takes
# at most this many bytes of compact JSON per character of that text. A scalar takes at most 5
# bytes per character of its own: 4 of UTF-8, 6 for an escape of 2 characters, 5 for go-yaml's
# `n` (`false`), 18 for `1e15`. Each mapping entry and sequence item owns a character (its `-`,
# `?` or `:`, or in flow the `,` or bracket after it) and adds at most 12 bytes: separators,
# quotes, an absent key's `"null"` and an absent value's `null`, the brackets of a block
# collection it holds (a flow collection's 2 go with its opening bracket). So at most 12 bytes
# a character, and the document's own 2 brackets: 14 for a text of one character or more.
JSON_PER_CHARACTER = 14
# compact JSON, one encoder for every object; no cycle check: a parsed document holds none
# (yaml_rs cannot build one, and `kubeyaml` refuses an alias that holds itself)
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def _json_bytes(doc: Any) -> int:
    """The bytes of `doc` as compact JSON in UTF-8 (an ASCII text's length, not encoded)."""
    text = _COMPACT.encode(doc)
    return len(text) if text.isascii() else len(text.encode())


def applied_size_problems(obj: RenderedObject, path: str) -> list[Problem]:
    """An object too big for the copy of itself that Argo CD's apply keeps in an annotation:
    the sync would fail on the API server."""
    own = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in _annotations(obj).items())
    room = naming.MAX_ANNOTATIONS_BYTES - APPLIED_MARGIN - own
    if obj.text_length is not None and obj.text_length * JSON_PER_CHARACTER <= room:
        return []  # far within, as nearly every object is
    size = _json_bytes(obj.doc)
    if size <= room:
        return []
    return [obj.problem(
        path, "$",
        f"{obj.kind} is {size:,} bytes as JSON; Argo CD applies it as `kubectl apply` does, "
        "keeping the whole object in its kubectl.kubernetes.io/last-applied-configuration "
        f"annotation, and Kubernetes refuses annotations over {naming.MAX_ANNOTATIONS_BYTES:,} "
        "bytes per object: the sync would fail",
        f"bring it under {room:,} bytes: every role repeats the args and env (and on runtime "
        "jobset the TF_CONFIG, which lists every task): fewer or shorter args and env values, "
        "fewer replicas, or data in a file on the volume")]


def _annotations(obj: RenderedObject) -> dict[str, Any]:
    meta = obj.doc.get("metadata") or {}
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    return ann if isinstance(ann, dict) else {}


def kept_by_argo(obj: RenderedObject) -> bool:
    """Whether Argo CD leaves this object in the cluster when it stops rendering and when its
    Application is deleted (Prune=false and Delete=false): the PV and PVC, with the data."""
    return not _missing_keep_options(obj)


def _missing_keep_options(obj: RenderedObject) -> list[str]:
    """The options of KEEP_OPTIONS that the object's sync-options annotation lacks."""
    options = [o.strip() for o in str(_annotations(obj).get(SYNC_OPTIONS, "")).split(",")]
    return [o for o in KEEP_OPTIONS if o not in options]


def _pod_specs(obj: RenderedObject) -> Iterable[tuple[str, dict[str, Any]]]:
    """(pointer, pod spec) of every pod template in a workload or a runtime's job."""
    spec = obj.doc.get("spec") or {}
    if not isinstance(spec, dict):
        return
    runtime = runtimes.of_object(obj.api_version, obj.kind)
    if runtime is not None:
        for template in runtime.pod_templates(obj.doc):
            pod = template.template.get("spec")
            if isinstance(pod, dict):
                yield f"{template.pointer}.spec", pod
        return
    where, pod = _workload_pod_spec(obj.kind, spec)
    if isinstance(pod, dict):
        yield where, pod


def _workload_pod_spec(kind: str, spec: dict[str, Any]) -> tuple[str, Any]:
    """(pointer, what is there) of the pod spec of a workload that is no runtime's job (its
    pod spec when a mapping); ("", None) for a kind that runs no pods."""
    if kind == "Pod":
        return "$.spec", spec
    if kind == "CronJob":
        template = (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {})
        return "$.spec.jobTemplate.spec.template.spec", template.get("spec")
    if kind in WORKLOAD_KINDS:
        return "$.spec.template.spec", (spec.get("template") or {}).get("spec")
    return "", None


# --- the training job ------------------------------------------------------------------------

def job_problems(obj: RenderedObject, path: str, cluster_domain: str) -> list[Problem]:
    """Its runtime's rules for a training job (a TFJob, a JobSet); none for other objects.
    `cluster_domain`: tfgen.yaml's `clusterDomain`."""
    runtime = runtimes.of_object(obj.api_version, obj.kind)
    if runtime is None:
        return []
    out: list[Problem] = []
    if not naming.DNS1035.match(obj.name) or len(obj.name) > naming.MAX_LABEL:
        out.append(obj.problem(path, "$.metadata.name",
                               f"{obj.kind} name {obj.name!r} is not a DNS-1035 label",
                               "lower-case letters, digits and '-', starting with a letter"))
    return out + [obj.problem(path, found.pointer, found.message, found.hint)
                  for found in runtime.job_problems(obj.doc, cluster_domain)]


# --- Pod Security Standards ------------------------------------------------------------------

def _pod_templates(obj: RenderedObject) -> Iterable[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(pointer, pod spec, template annotations) of every pod template of an object."""
    spec = obj.doc.get("spec") or {}
    if not isinstance(spec, dict):
        return
    for where, pod in _pod_specs(obj):
        template: Any = spec
        for part in where.split(".")[2:-1]:  # $.spec.<...>.template.spec -> the template
            template = template.get(part) if isinstance(template, dict) else None
        meta = template.get("metadata") if isinstance(template, dict) else None
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        yield where, pod, annotations if isinstance(annotations, dict) else {}


def pod_security_problems(
    objects: Sequence[RenderedObject], namespace: str, level: str, source: str,
    kube_version: str, path: str,
) -> list[Problem]:
    """Every pod template checked against the Pod Security level its namespace enforces: the
    admission controller would refuse the pods, and the TFJob would wait with none."""
    out = []
    for obj in objects:
        for where, pod, notes in _pod_templates(obj):
            for found in podsecurity.violations(pod, notes, level, kube_version):
                pointer = (f"{where.rsplit('.', 1)[0]}.{found.pointer}"
                           if found.pointer.startswith("metadata.") else
                           f"{where}.{found.pointer}")
                out.append(obj.problem(path, pointer,
                                       pods.message(namespace, level, source, found),
                                       pods.hint(found.control, namespace)))
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


def retired_problems(objects: Sequence[RenderedObject], retired: bool, path: str
                     ) -> list[Problem]:
    """A retired experiment renders no TFJob (run_job_problems expects none) but still
    something, or Argo CD never prunes its last objects."""
    if not retired or objects:
        return []
    return [Problem(path, pointer="$.spec.lifecycle", message="this retired experiment renders "
                    "no object at all: Argo CD's automated sync (allowEmpty: false) refuses a "
                    "sync that would prune everything, so its TFJob would keep running",
                    hint="remove it instead (`tfgen retire NAME --delete`, then `argocd app "
                    "delete` after the merge), or enable networkPolicy in tfgen.yaml, whose "
                    "policy a retired experiment on an existing claim keeps")]


def run_job_problems(
    objects: Sequence[RenderedObject], expected: Sequence[str], kind: str, path: str
) -> list[Problem]:
    """An experiment is one training run, a sweep one run per combination: its Application
    renders exactly the jobs (`kind`: its runtime's) its values name (`expected`: the runs'
    names, or the experiment's name without a sweep). None, or fewer, would pass every other
    rule while Argo CD trains nothing (a chart without the template, a `helm` that is not
    helm and prints nothing)."""
    jobs = [o for o in objects if runtimes.of_object(o.api_version, o.kind)]
    names = sorted(o.name for o in jobs if o.kind == kind)
    others = sorted(o.ref for o in jobs if o.kind != kind)
    if names == sorted(expected) and not others:
        return []
    said = _jobs_against_runs(sorted(set(expected) - set(names)),
                              sorted(set(names) - set(expected)), others)
    return [Problem(path, pointer=kind, message=f"the chart rendered {len(names)} {kind}s for "
                    f"this experiment; it must render one per run ({len(expected)}): {said}",
                    hint="check charts/tfjob-experiment/templates and the helm tfgen runs")]


def _jobs_against_runs(missing: list[str], extra: list[str], others: list[str]) -> str:
    """How the jobs rendered differ from the runs, in words: the runs with no job, the jobs of
    no run, the jobs of another kind; else a name rendered twice."""
    said = []
    if missing:
        said.append(f"missing {', '.join(missing)}")
    if extra:
        said.append(f"not a run of this experiment: {', '.join(extra)}")
    if others:
        said.append(f"not its runtime's kind: {', '.join(others)}")
    return "; ".join(said) or "a name twice"


def data_safety_problems(objects: Sequence[RenderedObject], path: str) -> list[Problem]:
    """Rules that keep the NAS data of one experiment alive through every sync."""
    pvs = [o for o in objects if o.kind == chart.VOLUME]
    pvcs = [o for o in objects if o.kind == chart.CLAIM]
    return (_no_hooks_or_classes(objects, path) + _nas_only(pvs, path)
            + _storage_kept(pvs, pvcs, path)
            + _storage_first(objects, pvs, pvcs, path) + _only_training_writes(objects, path))


def _no_hooks_or_classes(objects: Sequence[RenderedObject], path: str) -> list[Problem]:
    out = []
    for obj in objects:
        annotations = _annotations(obj)
        for key in HOOK_ANNOTATIONS:
            if key in annotations:
                out.append(obj.problem(path, f"$.metadata.annotations[{key!r}]",
                                       "hooks are not allowed: a hook runs arbitrary work around "
                                       "every sync (and a PostSync hook waits for training to "
                                       "end)", "remove the hook annotation"))
        if obj.kind == "StorageClass":
            out.append(obj.problem(path, "$.kind", "a StorageClass in an experiment could "
                                   "provision (and delete) volumes dynamically",
                                   "NAS volumes are static PVs; remove it"))
    return out


def _nas_only(pvs: list[RenderedObject], path: str) -> list[Problem]:
    """A PersistentVolume is the NAS, through one of the chart's three drivers: a hostPath (or
    any other) volume would hand a node's disk to whoever writes a spec."""
    out = []
    for pv in pvs:
        raw = pv.doc.get("spec")
        spec: dict[str, Any] = raw if isinstance(raw, dict) else {}
        sources = [k for k, v in spec.items() if isinstance(v, dict) and k in _PV_SOURCES]
        if _is_nas(spec, sources):
            continue
        out.append(pv.problem(path, "$.spec", f"volume source {', '.join(sources) or 'none'} "
                              "is not the NAS", f"csi with driver {chart.NAS_CSI_DRIVER}, "
                              f"flexVolume with driver {chart.NAS_FLEX_DRIVER}, or nfs"))
    return out


# Every volume source a PersistentVolumeSpec may hold (Kubernetes 1.30 and newer).
_PV_SOURCES = frozenset({
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
    "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local",
    "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos",
    "vsphereVolume",
})


# The NAS's volume sources, each with the driver it must name (nfs names none).
_NAS_DRIVERS = {"csi": chart.NAS_CSI_DRIVER, "flexVolume": chart.NAS_FLEX_DRIVER, "nfs": None}


def _is_nas(spec: dict[str, Any], sources: list[str]) -> bool:
    """Whether a PV's spec, holding the volume `sources`, holds one only, the NAS's."""
    if len(sources) != 1 or sources[0] not in _NAS_DRIVERS:
        return False
    driver = _NAS_DRIVERS[sources[0]]
    return driver is None or spec[sources[0]].get("driver") == driver


def _storage_kept(
    pvs: list[RenderedObject], pvcs: list[RenderedObject], path: str
) -> list[Problem]:
    """PV Retain; PV and PVC both kept by Argo CD; never one without the other."""
    out = []
    for pv in pvs:
        policy = (pv.doc.get("spec") or {}).get("persistentVolumeReclaimPolicy")
        if policy != "Retain":
            out.append(pv.problem(path, "$.spec.persistentVolumeReclaimPolicy",
                                  f"reclaim policy is {policy!r}; Delete/Recycle would wipe the "
                                  "NAS data with the volume", "Retain"))
    for obj in pvs + pvcs:
        missing = _missing_keep_options(obj)
        if missing:
            out.append(obj.problem(path, f"$.metadata.annotations[{SYNC_OPTIONS!r}]",
                                   f"missing {', '.join(missing)}: Argo CD could delete this "
                                   f"{obj.kind} (PV and PVC are kept or deleted together)",
                                   "Prune=false,Delete=false on both PV and PVC"))
    if bool(pvs) != bool(pvcs):
        lone = (pvs or pvcs)[0]
        out.append(lone.problem(path, "$", f"{lone.kind} without its "
                                f"{chart.CLAIM if pvs else chart.VOLUME}; the static NAS "
                                "binding needs both", "render both or neither"))
    return out


def _storage_first(
    objects: Sequence[RenderedObject], pvs: list[RenderedObject], pvcs: list[RenderedObject],
    path: str,
) -> list[Problem]:
    """Sync waves: PV before PVC before everything that mounts them."""
    out = []
    storage_waves = [_wave(o) for o in pvs + pvcs]
    latest = max(storage_waves, default=None)
    for obj in objects:
        if latest is None or obj.kind in (chart.VOLUME, chart.CLAIM):
            continue
        if _wave(obj) <= latest:
            out.append(obj.problem(path, f"$.metadata.annotations[{SYNC_WAVE!r}]",
                                   f"sync wave {_wave(obj)} is not after the storage "
                                   f"(PV/PVC waves {sorted(set(storage_waves))})",
                                   "PV -2, PVC -1, everything else 0"))
    for pv in pvs:
        for pvc in pvcs:
            if _wave(pv) >= _wave(pvc):
                out.append(pv.problem(path, f"$.metadata.annotations[{SYNC_WAVE!r}]",
                                      "the PV must sync in an earlier wave than its PVC",
                                      "PV -2, PVC -1"))
    return out


def _only_training_writes(objects: Sequence[RenderedObject], path: str) -> list[Problem]:
    """Only the training job writes; anything else mounting the volume does so read-only."""
    out = []
    for obj in objects:
        if obj.kind not in WORKLOAD_KINDS or runtimes.of_object(obj.api_version, obj.kind):
            continue
        for where, pod in _pod_specs(obj):
            for mount in _writable_claim_mounts(pod):
                out.append(obj.problem(path, f"{where}.{mount}", "mounts the experiment's "
                                       "volume writable; only the training job writes to the "
                                       "NAS", "readOnly: true"))
    return out


def _writable_claim_mounts(pod: dict[str, Any]) -> Iterator[str]:
    """Where a pod spec mounts one of its claims writable (`containers[0].volumeMounts[1]`)."""
    claims = _claims(pod)
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(pod.get(kind) or []):
            for mindex, mount in enumerate((container or {}).get("volumeMounts") or []):
                if mount.get("name") in claims and not mount.get("readOnly"):
                    yield f"{kind}[{index}].volumeMounts[{mindex}]"
