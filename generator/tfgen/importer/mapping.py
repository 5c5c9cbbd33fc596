"""A training job with its claim, PV and TensorBoard Deployment -> an experiment spec.

The reverse of `validate/rules/values.py`: the job's runtime and Kueue labels become
`runtime`, `queue` and `priority`, the pod templates become roles and what every role shares
becomes the spec's own field (`pods`), the claim the pods mount becomes `storage` (the NAS
behind it, or an existing claim when the input has no claim manifest), and a Deployment mounting
the same claim becomes `tensorboard`. Every field used is marked on its manifest; everything
else is listed by `leftout.leftovers` with the reason the spec cannot say it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..repo import naming
from ..repo.chart import CLAIM, KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL, RESERVED_PREFIXES, VOLUME
from .jobs import Job, Replica
from .manifests import Manifest, ManifestError
from .pods import PodTemplate, roles_of, shared_fields

CSI_DRIVER = "nasplugin.csi.alibabacloud.com"
FLEX_DRIVER = "alicloud/nas"
# What the chart writes on every PV and claim; other values cannot be imported.
ACCESS_MODES = ["ReadWriteMany"]
RECLAIM_POLICY = "Retain"
@dataclass
class Imported:
    """One spec built from the input, and what the input said that it does not."""

    name: str
    spec: dict[str, Any]
    job: Manifest
    used: list[Manifest]
    notes: list[str] = field(default_factory=list)  # changes in meaning, said in words


# --- storage and TensorBoard ----------------------------------------------------------------


def _claim_mount(pod: PodTemplate) -> tuple[str, str] | None:
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


def _named_by_claim(claim: Manifest, volumes: list[Manifest]) -> Manifest | None:
    """The PV the claim names (`spec.volumeName`)."""
    by_name = claim.get("spec", "volumeName")
    if not by_name:
        return None
    return next((volume for volume in volumes if volume.name == by_name), None)


def _claiming(claim: Manifest, volumes: list[Manifest]) -> Manifest | None:
    """The PV whose claimRef names the claim."""
    for volume in volumes:
        ref = volume.get("spec", "claimRef") or {}
        if isinstance(ref, dict) and ref.get("name") == claim.name:
            return volume
    return None


def _selected_by_claim(claim: Manifest, volumes: list[Manifest]) -> Manifest | None:
    """The PV the claim's selector matches, for a claim that names none."""
    labels = claim.get("spec", "selector", "matchLabels")
    if claim.get("spec", "volumeName") or not isinstance(labels, dict) or not labels:
        return None
    for volume in volumes:
        own = volume.get("metadata", "labels") or {}
        if all(own.get(k) == v for k, v in labels.items()):
            return volume
    return None


def _find_volume(claim: Manifest, manifests: list[Manifest]) -> Manifest:
    """The claim's PV in the input, as Kubernetes binds them: by the claim's volumeName, the
    PV's claimRef, or the claim's selector; ManifestError when the input has none."""
    volumes = [m for m in manifests if m.kind == VOLUME]
    for find in (_named_by_claim, _claiming, _selected_by_claim):
        volume = find(claim, volumes)
        if volume is not None:
            return volume
    raise ManifestError(
        f"{claim.where}: {claim.ref}: no PersistentVolume in the input for this claim "
        f"(by spec.volumeName, a PV's claimRef or the claim's selector); add the PV's manifest "
        "to import the NAS, or leave the claim's manifest out to import it as an existing claim")


@dataclass(frozen=True)
class _DriverSource:
    """A PV source of a NAS driver: the key under the PV's spec, the driver it names, the
    storage.nas.driver it becomes, and where below it the NAS fields are."""

    key: str
    driver: str
    name: str
    fields_at: str
    fields: tuple[str, ...]

    def matches(self, spec: dict[str, Any]) -> bool:
        source = spec.get(self.key)
        return isinstance(source, dict) and source.get("driver") == self.driver

    def read(self, volume: Manifest) -> dict[str, Any]:
        volume.take("spec", self.key, "driver")
        nas: dict[str, Any] = {"driver": self.name}
        for key in self.fields:
            value = volume.take("spec", self.key, self.fields_at, key)
            if value is not None:
                nas[key] = str(value)
        return nas


DRIVER_SOURCES = (
    _DriverSource("csi", CSI_DRIVER, "csi", "volumeAttributes",
                  ("server", "path", "vers", "options")),
    _DriverSource("flexVolume", FLEX_DRIVER, "flexvolume", "options",
                  ("server", "path", "vers", "mode", "options")),
)


def _nfs(volume: Manifest, notes: list[str]) -> dict[str, Any]:
    nas = {"driver": "nfs", "server": volume.take("spec", "nfs", "server"),
           "path": volume.take("spec", "nfs", "path")}
    for option in volume.sequence("spec", "mountOptions"):
        key, _, value = str(option).partition("=")
        if key in ("vers", "nfsvers"):
            nas["vers"] = value
    if "vers" not in nas:
        notes.append(f"{volume.ref}: no NFS version in its mountOptions; the chart adds "
                     "nfsvers=3 (set storage.nas.vers to change it)")
    return nas


def _nas_source(volume: Manifest, notes: list[str]) -> dict[str, Any]:
    """storage.nas as the PV's source says it: a NAS driver's, or NFS."""
    spec = volume.mapping("spec")
    for source in DRIVER_SOURCES:
        if source.matches(spec):
            return source.read(volume)
    if isinstance(spec.get("nfs"), dict):
        return _nfs(volume, notes)
    raise ManifestError(
        f"{volume.where}: {volume.ref}: its source is none of those tfgen creates (CSI "
        f"{CSI_DRIVER}, FlexVolume {FLEX_DRIVER}, NFS); leave the PV and claim out of the "
        "input to import the claim as an existing claim")


# PV fields that say what the chart writes on its PV anyway: taken when they hold these values.
CHART_PV_FIELDS: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("accessModes", (ACCESS_MODES,)),
    ("persistentVolumeReclaimPolicy", (RECLAIM_POLICY,)),
    ("volumeMode", ("Filesystem", None)),
)


def _nas(volume: Manifest, notes: list[str]) -> dict[str, Any]:
    nas = _nas_source(volume, notes)
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
    for key, written in CHART_PV_FIELDS:
        if volume.get("spec", key) in written:
            volume.take("spec", key)
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
        replica = Replica("tensorboard", "TensorBoard", ("spec", "template"), None, None)
        pod = PodTemplate(deployment, replica, spec, (*spec, "containers", index))
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


def _scheduling(job: Job, notes: list[str]) -> dict[str, Any]:
    """spec.runtime, and the Kueue queue and priority the job's labels name (taken). A queued
    job's suspend is Kueue's (it creates the job suspended and unsuspends it on admission)."""
    manifest = job.manifest
    out: dict[str, Any] = {"runtime": job.runtime}
    labels = manifest.mapping("metadata", "labels")
    if labels.get(KUEUE_QUEUE_LABEL):
        out["queue"] = str(manifest.take("metadata", "labels", KUEUE_QUEUE_LABEL))
        if labels.get(KUEUE_PRIORITY_LABEL):
            out["priority"] = str(manifest.take("metadata", "labels", KUEUE_PRIORITY_LABEL))
        if job.run_policy.pop("suspend", None) is not None:
            notes.append(f"{manifest.ref}: suspend is Kueue's for a job in queue "
                         f"{out['queue']} (it admits the job); the spec leaves it out")
    return out


def _mounted_claim(job: Job, pods: list[PodTemplate], notes: list[str]) -> tuple[str, str]:
    """The one claim every pod mounts, and where (noted for the pods that mount none);
    ManifestError when the pods mount none, or different ones."""
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
    return claim_name, mount_path


def _storage(
    job: Job, pods: list[PodTemplate], manifests: list[Manifest], used: list[Manifest],
    notes: list[str],
) -> tuple[dict[str, Any], str]:
    claim_name, mount_path = _mounted_claim(job, pods, notes)
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


def _metadata(manifest: Manifest, name: str, owner: str, notes: list[str]) -> dict[str, Any]:
    """The spec's metadata: the name, the job's namespace, the owner, and the labels and
    annotations of the job's own (not those tfgen or the cluster write)."""
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
        kept = {}
        for k, v in manifest.mapping("metadata", key).items():
            if _own_key(str(k)):
                manifest.take("metadata", key, k)
                kept[k] = str(v)
        if kept:
            metadata[key] = kept
    return metadata


def _own_key(key: str) -> bool:
    """Whether a label or annotation is the job's own, for the spec to carry."""
    return (not key.startswith(RESERVED_PREFIXES)
            and key != "kubectl.kubernetes.io/last-applied-configuration")


def _tensorboard_of(manifests: list[Manifest], job: Manifest, claim: str, mount_path: str,
                    used: list[Manifest], notes: list[str]) -> dict[str, Any]:
    """The spec's tensorboard from the first Deployment in the job's namespace that serves
    TensorBoard from the claim (marked used), else TensorBoard off."""
    for deployment in manifests:
        if deployment.kind != "Deployment" or not _same_namespace(deployment, job.namespace):
            continue
        tensorboard = _tensorboard(deployment, claim, mount_path, notes)
        if tensorboard is not None:
            used.append(deployment)
            deployment.take("apiVersion")
            deployment.take("kind")
            return tensorboard
    return {"enabled": False}


def build_spec(job: Job, manifests: list[Manifest], name: str, owner: str) -> Imported:
    """One training job and the objects around it -> the spec (plain data, in the order people write
    it); the manifests used are marked, the notes say what changes meaning."""
    manifest = job.manifest
    notes: list[str] = []
    used = [manifest]
    pods, roles = roles_of(job, notes)
    metadata = _metadata(manifest, name, owner, notes)
    spec = {**_scheduling(job, notes), **shared_fields(pods, roles)}
    spec["roles"] = {role: roles[role] for role in naming.ROLES if role in roles}
    storage, claim = _storage(job, pods, manifests, used, notes)
    spec["storage"] = storage
    spec["tensorboard"] = _tensorboard_of(manifests, manifest, claim, storage["mountPath"],
                                          used, notes)
    if job.run_policy:
        spec["runPolicy"] = job.run_policy
    return Imported(name, {"apiVersion": "tfgen.io/v1", "kind": "Experiment",
                           "metadata": metadata, "spec": spec}, manifest, used, notes)
