"""A TFJob with its claim, PersistentVolume and TensorBoard Deployment -> an experiment spec.

The reverse of `render.values`: the pod templates become roles (image, command, args, env,
resources and GPUs, node selectors, tolerations, restart policy), what every role shares
becomes the spec's own field, the claim the pods mount becomes `storage` (the NAS behind it,
or an existing claim when the input has no claim manifest), and a Deployment mounting the same
claim becomes `tensorboard`. Every field used is marked on its manifest; everything else is
listed by `leftovers` with the reason the spec cannot say it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..repo import naming
from ..repo.chart import CLAIM, TFJOB_CONTAINER, VOLUME
from .manifests import Manifest, ManifestError, Path_, pointer
from .versions import DEFAULT_PORT, Job, Replica

CSI_DRIVER = "nasplugin.csi.alibabacloud.com"
FLEX_DRIVER = "alicloud/nas"
# What the chart writes on every PV and claim; other values cannot be imported.
ACCESS_MODES = ["ReadWriteMany"]
RECLAIM_POLICY = "Retain"
# Pod-level fields the spec sets once for every role (spec field <- pod or container path).
SHARED_POD_FIELDS = {
    "imagePullSecrets": ("imagePullSecrets",),
    "serviceAccountName": ("serviceAccountName",),
    "schedulerName": ("schedulerName",),
    "priorityClassName": ("priorityClassName",),
    "securityContext": ("securityContext",),
}
SECURITY_FIELDS = ("runAsUser", "runAsGroup", "fsGroup", "supplementalGroups")
SHARED_CONTAINER_FIELDS = ("imagePullPolicy", "workingDir")
# Fields the cluster writes; an export from `kubectl get -o yaml` is full of them.
CLUSTER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                  "selfLink", "finalizers", "ownerReferences", "deletionTimestamp")

# Why a field the spec cannot express is left out, by the last keys of its path.
REASONS: tuple[tuple[Path_, str], ...] = (
    (("status",), "the cluster's state, not part of the spec"),
    *((("metadata", key), "set by the cluster") for key in CLUSTER_FIELDS),
    (("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
     "kubectl's copy of the applied object"),
    (("metadata", "name"),
     "tfgen derives every object name from the experiment name"),
    (("template", "metadata"), "tfgen sets the pod labels and annotations itself"),
    (("ttlSecondsAfterFinished",),
     "tfgen never sets a TTL: Argo CD would recreate the deleted TFJob and train again"),
    (("tensorBoard",), "v1alpha1's built-in TensorBoard; tfgen runs its own from the spec"),
    (("volumeHandle",), "tfgen sets it to the PV's name, as the NAS CSI driver requires"),
    (("limits", "cpu"), "tfgen sets no CPU limit (throttling slows training); the request "
                        "is kept"),
    (("ports",), "tfgen sets the container ports itself (the operator's tfjob-port 2222, "
                 "TensorBoard's 6006)"),
    (("tfPort",), "the operator gives each replica port 2222"),
)


@dataclass
class Imported:
    """One spec built from the input, and what the input said that it does not."""

    name: str
    spec: dict[str, Any]
    job: Manifest
    used: list[Manifest]
    notes: list[str] = field(default_factory=list)  # changes in meaning, said in words


def _reason(manifest: Manifest, parts: Path_) -> str:
    for length in range(len(parts), 0, -1):
        if parts[:length] in manifest.why:
            return manifest.why[parts[:length]]
    last_applied = parts[-1:] == ("kubectl.kubernetes.io/last-applied-configuration",)
    if parts[:1] == ("metadata",) and parts[1:2] in (("labels",), ("annotations",)) and (
            manifest.kind != "TFJob" and not last_applied):
        return "tfgen labels every object from the spec's metadata (taken from the TFJob)"
    if parts[:2] == ("metadata", "namespace"):
        return "tfgen puts every object in the spec's namespace (the TFJob's)"
    for tail, why in REASONS:
        for start in range(len(parts) - len(tail) + 1):
            if parts[start:start + len(tail)] == tail:
                return why
    if parts and parts[0] in ("metadata", "labels", "annotations") or "labels" in parts:
        key = str(parts[-1])
        if key.startswith(naming.RESERVED_PREFIXES):
            return "tfgen sets labels and annotations with this prefix itself"
    return "the spec has no field for it"


def leftovers(manifests: list[Manifest], used: list[Manifest]) -> list[str]:
    """`Kind/name path: value (why)` for every input field the specs do not carry."""
    lines: list[str] = []
    for manifest in manifests:
        if not any(manifest is m for m in used):
            why = ("tfgen creates the TensorBoard's Service itself" if manifest.kind == "Service"
                   else "not part of an imported experiment (a TFJob, the claim its pods "
                        "mount, that claim's PV, a TensorBoard Deployment on the same claim)")
            lines.append(f"{manifest.where}: {manifest.ref}: not imported ({why})")
            continue
        for parts, value in manifest.leftovers():
            shown = repr(value) if not isinstance(value, str) else value
            if len(shown) > 80:
                shown = shown[:77] + "..."
            lines.append(f"{manifest.where}: {manifest.ref} {pointer(parts)}: {shown} "
                         f"({_reason(manifest, parts)})")
    return lines


# --- the pods -------------------------------------------------------------------------------


@dataclass
class Pod:
    """One replica group's pod template: the job, the paths of its pod spec and container."""

    job: Manifest
    replica: Replica
    spec: Path_
    container: Path_ | None

    def get(self, *parts: str | int) -> Any:
        return self.job.get(*self.spec, *parts)

    def take(self, *parts: str | int) -> Any:
        return self.job.take(*self.spec, *parts)

    def cget(self, *parts: str | int) -> Any:
        return self.job.get(*self.container, *parts) if self.container else None

    def ctake(self, *parts: str | int) -> Any:
        return self.job.take(*self.container, *parts) if self.container else None

    def clist(self, *parts: str | int) -> list[Any]:
        return self.job.sequence(*self.container, *parts) if self.container else []

    def cmap(self, *parts: str | int) -> dict[str, Any]:
        return self.job.mapping(*self.container, *parts) if self.container else {}


def _pod(job: Manifest, replica: Replica) -> Pod:
    spec = (*replica.template, "spec")
    containers = job.get(*spec, "containers")
    where = f"{job.where}: {job.ref} {pointer(spec)}.containers"
    if not isinstance(containers, list) or not containers:
        raise ManifestError(f"{where}: no containers")
    names = [c.get("name") if isinstance(c, dict) else None for c in containers]
    if TFJOB_CONTAINER in names:
        index = names.index(TFJOB_CONTAINER)
    elif len(containers) == 1:
        index = 0  # the chart names it tensorflow, the name the operator looks for
    else:
        raise ManifestError(f"{where}: none of the containers is named {TFJOB_CONTAINER!r}, "
                            "the one the operator runs TensorFlow in")
    container = (*spec, "containers", index)
    job.take(*container, "name")
    if job.get(*container, "ports") == [{"name": "tfjob-port", "containerPort": DEFAULT_PORT}]:
        job.take(*container, "ports")
    return Pod(job, replica, spec, container)


def _env(pod: Pod, notes: list[str]) -> list[dict[str, Any]]:
    out = []
    for index, entry in enumerate(pod.clist("env")):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or entry.get(
                "name") == "TF_CONFIG":
            continue  # left over and listed; TF_CONFIG is the operator's
        value_from = entry.get("valueFrom")
        if "value" in entry or not value_from:
            pod.ctake("env", index)
            out.append({"name": entry["name"], "value": str(entry.get("value", ""))})
            continue
        for ref in ("secretKeyRef", "configMapKeyRef"):
            source = value_from.get(ref) if isinstance(value_from, dict) else None
            if isinstance(source, dict) and len(value_from) == 1:
                pod.ctake("env", index, "name")
                pod.ctake("env", index, "valueFrom", ref, "name")
                pod.ctake("env", index, "valueFrom", ref, "key")
                out.append({"name": entry["name"],
                            ref: {"name": source.get("name"), "key": source.get("key")}})
                break
        else:
            notes.append(f"{pod.job.ref}: variable {entry.get('name')} of "
                         f"{pod.replica.written} is not imported (the spec takes a value, a "
                         "Secret key or a ConfigMap key)")
    return out


def _resources(pod: Pod, role: dict[str, Any], notes: list[str]) -> None:
    pod.cmap("resources")
    requests = pod.cmap("resources", "requests")
    limits = pod.cmap("resources", "limits")
    what = f"{pod.job.ref} {pod.replica.written}"
    if "cpu" in requests:
        role["cpu"] = str(pod.ctake("resources", "requests", "cpu"))
    elif "cpu" in limits:  # Kubernetes requests what a container limits when it says no more
        role["cpu"] = str(limits["cpu"])
    memory_request, memory_limit = requests.get("memory"), limits.get("memory")
    if memory_limit is not None:
        role["memory"] = str(pod.ctake("resources", "limits", "memory"))
        if memory_request is not None and str(memory_request) == str(memory_limit):
            pod.ctake("resources", "requests", "memory")
    elif memory_request is not None:
        role["memory"] = str(pod.ctake("resources", "requests", "memory"))
        notes.append(f"{what}: memory {memory_request} becomes the limit too (the spec's memory "
                     "is request and limit)")
    gpus = [key for key in limits if "gpu" in str(key).lower() and "/" in str(key)]
    if gpus:
        key = gpus[0]
        count = pod.ctake("resources", "limits", key)
        role["gpus"] = int(count) if str(count).isdigit() else count
        role["gpuResource"] = key
        if key in requests and str(requests[key]) == str(count):
            pod.ctake("resources", "requests", key)


def _role(pod: Pod, notes: list[str]) -> dict[str, Any]:
    replica = pod.replica
    role: dict[str, Any] = {}
    if replica.replicas is not None:
        role["replicas"] = replica.replicas
    image = pod.ctake("image") or replica.default_image
    if image:
        role["image"] = image
    for key in ("command", "args"):
        value = pod.ctake(key)
        if value is not None:
            role[key] = [str(item) for item in value] if isinstance(value, list) else value
    role["env"] = _env(pod, notes)
    _resources(pod, role, notes)
    for key in ("nodeSelector", "tolerations"):
        value = pod.take(key)
        if value:
            role[key] = value
    if replica.restart_policy is not None:
        role["restartPolicy"] = replica.restart_policy
    return role


def _shared(pods: list[Pod], spec: dict[str, Any], key: str, read: Any) -> None:
    """A field the spec sets for every role: taken when all pods agree (or say nothing)."""
    values = [read(pod, False) for pod in pods]
    given = [v for v in values if v not in (None, "", [], {})]
    if not given:
        return
    if all(v == given[0] for v in given) and len(given) == len(values):
        for pod in pods:
            read(pod, True)
        spec[key] = given[0]
        return
    shown = ", ".join(f"{pod.replica.written}: {value!r}" for pod, value in zip(
        pods, values, strict=True))
    for pod in pods:  # left over on every pod, each value listed
        where = pod.container if key in SHARED_CONTAINER_FIELDS else pod.spec
        if where is not None:
            field_path = (*where, SHARED_POD_FIELDS.get(key, (key,))[0])
            pod.job.why[field_path] = (
                f"the spec sets {key} once for every role, and the groups differ ({shown})")


def _security(pod: Pod, take: bool) -> Any:
    context = pod.get("securityContext")
    if not isinstance(context, dict):
        return context
    known = {k: v for k, v in context.items() if k in SECURITY_FIELDS}
    if take:
        for k in known:
            pod.take("securityContext", k)
    return known


def _pull_secrets(pod: Pod, take: bool) -> Any:
    secrets = pod.get("imagePullSecrets")
    if not isinstance(secrets, list):
        return secrets
    if take:
        for index in range(len(secrets)):
            pod.take("imagePullSecrets", index, "name")
    return [s.get("name") if isinstance(s, dict) else s for s in secrets]


def _readers() -> dict[str, Any]:
    readers: dict[str, Any] = {
        "imagePullSecrets": _pull_secrets,
        "securityContext": _security,
    }
    for key, (pod_key,) in SHARED_POD_FIELDS.items():
        readers.setdefault(key, lambda pod, take, k=pod_key: (pod.take if take else pod.get)(k))
    for key in SHARED_CONTAINER_FIELDS:
        readers[key] = lambda pod, take, k=key: (pod.ctake if take else pod.cget)(k)
    return readers


def _lift(roles: dict[str, dict[str, Any]], spec: dict[str, Any], key: str) -> None:
    """Move a per-role value the roles share up to the spec (how people write specs)."""
    values = [role.get(key) for role in roles.values()]
    if values[0] is not None and all(v == values[0] for v in values):
        spec[key] = values[0]
        for role in roles.values():
            role.pop(key, None)


# --- storage and TensorBoard ----------------------------------------------------------------


def _claim_mount(pod: Pod) -> tuple[str, str] | None:
    """(claim, mount path) of the claim the pod mounts, marking both used."""
    volumes = pod.job.sequence(*pod.spec, "volumes")
    mounts = pod.clist("volumeMounts")
    for index, volume in enumerate(volumes):
        claim = volume.get("persistentVolumeClaim") if isinstance(volume, dict) else None
        if not isinstance(claim, dict):
            continue
        for mount_index, mount in enumerate(mounts):
            if isinstance(mount, dict) and mount.get("name") == volume.get("name"):
                pod.take("volumes", index, "name")
                pod.take("volumes", index, "persistentVolumeClaim", "claimName")
                pod.ctake("volumeMounts", mount_index, "name")
                return str(claim.get("claimName")), str(
                    pod.ctake("volumeMounts", mount_index, "mountPath"))
    return None


def _same_namespace(manifest: Manifest, namespace: str) -> bool:
    return manifest.namespace in ("", namespace)


def _find_volume(claim: Manifest, manifests: list[Manifest]) -> Manifest:
    volumes = [m for m in manifests if m.kind == VOLUME]
    by_name = claim.get("spec", "volumeName")
    for volume in volumes:
        if by_name and volume.name == by_name:
            return volume
    for volume in volumes:
        ref = volume.get("spec", "claimRef") or {}
        if isinstance(ref, dict) and ref.get("name") == claim.name:
            return volume
    labels = claim.get("spec", "selector", "matchLabels")
    for volume in volumes:
        own = volume.get("metadata", "labels") or {}
        if not by_name and isinstance(labels, dict) and labels and all(
                own.get(k) == v for k, v in labels.items()):
            return volume
    raise ManifestError(
        f"{claim.where}: {claim.ref}: no PersistentVolume in the input for this claim "
        f"(by spec.volumeName, a PV's claimRef or the claim's selector); add the PV's manifest "
        "to import the NAS, or leave the claim's manifest out to import it as an existing claim")


def _nas(volume: Manifest, notes: list[str]) -> dict[str, Any]:
    spec = volume.mapping("spec")
    nas: dict[str, Any]
    if isinstance(spec.get("csi"), dict) and spec["csi"].get("driver") == CSI_DRIVER:
        volume.take("spec", "csi", "driver")
        attributes = ("spec", "csi", "volumeAttributes")
        nas = {"driver": "csi"}
        for key in ("server", "path", "vers", "options"):
            value = volume.take(*attributes, key)
            if value is not None:
                nas[key] = str(value)
    elif isinstance(spec.get("flexVolume"), dict) and spec["flexVolume"].get(
            "driver") == FLEX_DRIVER:
        volume.take("spec", "flexVolume", "driver")
        nas = {"driver": "flexvolume"}
        for key in ("server", "path", "vers", "mode", "options"):
            value = volume.take("spec", "flexVolume", "options", key)
            if value is not None:
                nas[key] = str(value)
    elif isinstance(spec.get("nfs"), dict):
        nas = {"driver": "nfs", "server": volume.take("spec", "nfs", "server"),
               "path": volume.take("spec", "nfs", "path")}
        for option in volume.sequence("spec", "mountOptions"):
            key, _, value = str(option).partition("=")
            if key in ("vers", "nfsvers"):
                nas["vers"] = value
        if "vers" not in nas:
            notes.append(f"{volume.ref}: no NFS version in its mountOptions; the chart adds "
                         "nfsvers=3 (set storage.nas.vers to change it)")
    else:
        raise ManifestError(
            f"{volume.where}: {volume.ref}: its source is none of those tfgen creates (CSI "
            f"{CSI_DRIVER}, FlexVolume {FLEX_DRIVER}, NFS); leave the PV and claim out of the "
            "input to import the claim as an existing claim")
    if "vers" not in nas:
        nas["vers"] = "3"  # the driver's default, written so tfgen.yaml defaults cannot change it
    # the chart writes mountOptions for csi and nfs; a FlexVolume's stay listed as left out
    if volume.sequence("spec", "mountOptions") and nas["driver"] != "flexvolume":
        nas["mountOptions"] = [str(o) for o in volume.take("spec", "mountOptions")]
    capacity = volume.take("spec", "capacity", "storage")
    if capacity is not None:
        nas["capacity"] = str(capacity)
    storage_class = volume.take("spec", "storageClassName")
    if storage_class:
        nas["storageClassName"] = storage_class
    if volume.get("spec", "accessModes") == ACCESS_MODES:
        volume.take("spec", "accessModes")
    if volume.get("spec", "persistentVolumeReclaimPolicy") == RECLAIM_POLICY:
        volume.take("spec", "persistentVolumeReclaimPolicy")
    if volume.get("spec", "volumeMode") in ("Filesystem", None):
        volume.take("spec", "volumeMode")
    return nas


def _take_claim(claim: Manifest, volume: Manifest) -> None:
    """The claim's fields that only bind it to its PV: tfgen's claim binds the same way."""
    for key, expected in (("accessModes", ACCESS_MODES), ("volumeName", volume.name),
                          ("storageClassName", volume.get("spec", "storageClassName")),
                          ("volumeMode", "Filesystem")):
        if claim.get("spec", key) == expected:
            claim.take("spec", key)
    if claim.get("spec", "resources", "requests", "storage") == volume.get(
            "spec", "capacity", "storage"):
        claim.take("spec", "resources", "requests", "storage")
    claim.take("spec", "selector")
    ref = volume.get("spec", "claimRef")
    if isinstance(ref, dict) and ref.get("name") == claim.name:
        volume.take("spec", "claimRef")


def _logdir(tokens: list[str]) -> str | None:
    words: list[str] = []
    for token in tokens:
        words.extend(shlex.split(token) if " " in token else [token])
    for index, word in enumerate(words):
        if word.startswith("--logdir="):
            return word.split("=", 1)[1]
        if word == "--logdir" and index + 1 < len(words):
            return words[index + 1]
    return None


def _tensorboard(
    deployment: Manifest, claim: str, mount_path: str, notes: list[str]
) -> dict[str, Any] | None:
    spec = ("spec", "template", "spec")
    containers = deployment.sequence(*spec, "containers")
    for index, container in enumerate(containers):
        if not isinstance(container, dict):
            continue
        at = (*spec, "containers", index)
        tokens = [str(t) for t in deployment.sequence(*at, "command") + deployment.sequence(
            *at, "args")]
        log_dir = _logdir(tokens)
        if log_dir is None:
            continue
        pod = Pod(deployment, Replica("tensorboard", "TensorBoard", ("spec", "template"), None,
                                      None), spec, (*spec, "containers", index))
        found = _claim_mount(pod)
        if found is None or found[0] != claim:
            continue
        tb_mount = found[1].rstrip("/")
        if not (log_dir + "/").startswith(tb_mount + "/"):
            notes.append(f"{deployment.ref}: --logdir {log_dir} is not on the claim (mounted "
                         f"at {found[1]}); TensorBoard left off")
            return None
        pod.ctake("command")
        pod.ctake("args")
        tensorboard: dict[str, Any] = {
            "enabled": True,
            "logDir": mount_path.rstrip("/") + log_dir[len(tb_mount):],
        }
        if container.get("image"):
            tensorboard["image"] = pod.ctake("image")
        notes.append(f"{deployment.ref}: becomes tfgen's TensorBoard (its own command, probes "
                     "and security settings; only the image and log directory are imported)")
        return tensorboard
    return None


# --- the spec -------------------------------------------------------------------------------


def _storage(
    job: Job, pods: list[Pod], manifests: list[Manifest], used: list[Manifest],
    notes: list[str],
) -> tuple[dict[str, Any], str]:
    mounts = {pod.replica.written: _claim_mount(pod) for pod in pods}
    found = {m for m in mounts.values() if m is not None}
    where = f"{job.manifest.where}: {job.manifest.ref}"
    if not found:
        raise ManifestError(
            f"{where}: its pods mount no PersistentVolumeClaim; a tfgen experiment keeps its "
            "data on one (a NAS PV + claim, or an existing claim): mount it in the pod templates")
    if len(found) > 1:
        shown = ", ".join(f"{t}: {m[0]} at {m[1]}" if m else f"{t}: none"
                          for t, m in mounts.items())
        raise ManifestError(f"{where}: the replica groups mount different claims or paths "
                            f"({shown}); tfgen mounts one claim at one path in every pod")
    claim_name, mount_path = found.pop()
    for written, mount in mounts.items():
        if mount is None:
            notes.append(f"{job.manifest.ref} {written}: will mount {claim_name} at "
                         f"{mount_path} too (every tfgen pod mounts the experiment's storage)")
    namespace = job.manifest.namespace
    claims = [m for m in manifests if m.kind == CLAIM and m.name == claim_name
              and _same_namespace(m, namespace)]
    if not claims:
        return {"existingClaim": claim_name, "mountPath": mount_path}, claim_name
    claim = claims[0]
    volume = _find_volume(claim, manifests)
    for manifest in (claim, volume):
        manifest.take("apiVersion")
        manifest.take("kind")
        used.append(manifest)
    nas = _nas(volume, notes)
    _take_claim(claim, volume)
    return {"nas": nas, "mountPath": mount_path}, claim_name


def build_spec(job: Job, manifests: list[Manifest], name: str, owner: str) -> Imported:
    """One TFJob and the objects around it -> the spec (plain data, in the order people write
    it); the manifests used are marked, the notes say what changes meaning."""
    manifest = job.manifest
    notes: list[str] = []
    used = [manifest]
    pods = [_pod(manifest, replica) for replica in job.replicas]
    roles = {pod.replica.role: _role(pod, notes) for pod in pods}
    if name == manifest.name:
        manifest.take("metadata", "name")
    metadata: dict[str, Any] = {"name": name}
    if manifest.namespace:
        metadata["namespace"] = manifest.take("metadata", "namespace")
    else:
        notes.append(f"{manifest.ref} names no namespace: the spec takes tfgen.yaml's default "
                     "(set metadata.namespace to choose)")
    metadata["owner"] = owner
    for key in ("labels", "annotations"):
        values = manifest.mapping("metadata", key)
        kept = {k: str(v) for k, v in values.items()
                if not str(k).startswith(naming.RESERVED_PREFIXES)
                and k != "kubectl.kubernetes.io/last-applied-configuration"}
        for k in kept:
            manifest.take("metadata", key, k)
        if kept:
            metadata[key] = kept
    spec: dict[str, Any] = {}
    for key in ("image", "command", "args", "env"):
        _lift(roles, spec, key)
    for role in roles.values():
        if role.get("env") == []:
            role.pop("env")
    readers = _readers()
    for key in (*SHARED_CONTAINER_FIELDS, *SHARED_POD_FIELDS):
        _shared(pods, spec, key, readers[key])
    spec["roles"] = {role: roles[role] for role in naming.ROLES if role in roles}
    storage, claim = _storage(job, pods, manifests, used, notes)
    spec["storage"] = storage
    tensorboard = None
    for deployment in manifests:
        if deployment.kind == "Deployment" and _same_namespace(deployment,
                                                               manifest.namespace):
            tensorboard = _tensorboard(deployment, claim, storage["mountPath"], notes)
            if tensorboard is not None:
                used.append(deployment)
                deployment.take("apiVersion")
                deployment.take("kind")
                break
    spec["tensorboard"] = tensorboard or {"enabled": False}
    if job.run_policy:
        spec["runPolicy"] = job.run_policy
    return Imported(name, {"apiVersion": "tfgen.io/v1", "kind": "Experiment",
                           "metadata": metadata, "spec": spec}, manifest, used, notes)
