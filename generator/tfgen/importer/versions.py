"""Every TFJob API version -> one shape: the replica groups and the run policy.

The training operator's TFJob changed shape three times; README.md ("Importing existing
manifests") describes each conversion:

- `kubeflow.org/v1alpha1`: `spec.replicaSpecs` is a list, each item naming its type in
  `tfReplicaType` (MASTER, WORKER, PS); the restart policy is the pod template's; `spec.tfImage`
  is the image of a container that names none; `tfPort` 2222 and a `terminationPolicy` ending
  the job with MASTER 0 are what v1 does anyway.
- `v1alpha2` and `v1beta1`: `spec.tfReplicaSpecs` maps the type (Master, Worker, PS, Chief,
  Evaluator) to `replicas`, `restartPolicy` and `template`; `cleanPodPolicy`,
  `activeDeadlineSeconds` and `backoffLimit` sit directly under `spec`.
- `v1`: the same replica map; the run policy under `spec.runPolicy` (early v1 releases kept
  it directly under `spec`, and both are read).

Replica types are matched without regard to case, as the operator does; the spec's roles and
their replica types have one home, `repo.naming`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..repo import naming, runtimes
from .manifests import Manifest, ManifestError, Path_

# The runtime whose job this module reads, in every API version its kind had; another
# runtime's job is read as the job of this one it stands for (`jobsets`, `Runtime.as_tfjob`).
RUNTIME = runtimes.TFJOB
API_VERSIONS = ("kubeflow.org/v1alpha1", "kubeflow.org/v1alpha2", "kubeflow.org/v1beta1",
                RUNTIME.api_version)
# The port the operator gives every replica (`tfjob-port`); v1alpha1 let a job choose another.
DEFAULT_PORT = 2222
# The run-policy fields the spec's runPolicy holds, under the names every version uses.
RUN_POLICY_FIELDS = ("cleanPodPolicy", "activeDeadlineSeconds", "backoffLimit", "suspend",
                     "schedulingPolicy")
_ROLE_OF_TYPE = {replica_type.lower(): role for role, replica_type in naming.REPLICA_TYPES.items()}


@dataclass
class Replica:
    """One replica group: its spec role, where its pod template is, and what the job says."""

    role: str
    written: str  # the type as the input spells it (MASTER, Worker, ...)
    template: Path_  # path of the pod template in the TFJob
    replicas: int | None
    restart_policy: str | None
    default_image: str | None = None  # v1alpha1's spec.tfImage


@dataclass
class Job:
    """A training job of any runtime and version in one shape."""

    manifest: Manifest
    replicas: list[Replica]
    run_policy: dict[str, Any]
    runtime: str = RUNTIME.name  # spec.runtime


def _role(job: Manifest, written: Any, at: str, seen: dict[str, str]) -> str:
    role = _ROLE_OF_TYPE.get(str(written).lower())
    if role is None:
        known = ", ".join(naming.REPLICA_TYPES.values())
        raise ManifestError(
            f"{job.where}: {job.ref} {at}: unknown replica type {written!r} (the operator "
            f"knows {known}, in any case)")
    if role in seen:
        raise ManifestError(
            f"{job.where}: {job.ref} {at}: a second {naming.REPLICA_TYPES[role]} replica group "
            f"(the first is {seen[role]}); merge them into one")
    seen[role] = str(written)
    return role


def _v1alpha1(job: Manifest) -> list[Replica]:
    specs = job.get("spec", "replicaSpecs")
    if not isinstance(specs, list) or not specs:
        raise ManifestError(f"{job.where}: {job.ref}: spec.replicaSpecs must list the replica "
                            "groups (kubeflow.org/v1alpha1)")
    tf_image = job.take("spec", "tfImage")
    chief = job.get("spec", "terminationPolicy", "chief")
    if isinstance(chief, dict) and str(chief.get("replicaName", "")).upper() == "MASTER" and (
            chief.get("replicaIndex", 0) == 0):
        job.take("spec", "terminationPolicy")  # the job ends with master 0: what v1 does
    seen: dict[str, str] = {}
    out = []
    for index, item in enumerate(specs):
        at = f"spec.replicaSpecs[{index}]"
        if not isinstance(item, dict):
            raise ManifestError(f"{job.where}: {job.ref} {at}: not a mapping")
        written = job.take("spec", "replicaSpecs", index, "tfReplicaType")
        if written is None:
            raise ManifestError(f"{job.where}: {job.ref} {at}: no tfReplicaType")
        role = _role(job, written, at, seen)
        if job.get("spec", "replicaSpecs", index, "tfPort") == DEFAULT_PORT:
            job.take("spec", "replicaSpecs", index, "tfPort")
        out.append(Replica(
            role=role, written=str(written),
            template=("spec", "replicaSpecs", index, "template"),
            replicas=job.take("spec", "replicaSpecs", index, "replicas"),
            # v1alpha1 restarts pods by the pod's own policy; v1 moved it to the replica group
            restart_policy=job.take("spec", "replicaSpecs", index, "template", "spec",
                                    "restartPolicy"),
            default_image=tf_image if isinstance(tf_image, str) else None,
        ))
    return out


def _replica_map(job: Manifest) -> list[Replica]:
    specs = job.get("spec", "tfReplicaSpecs")
    if not isinstance(specs, dict) or not specs:
        raise ManifestError(f"{job.where}: {job.ref}: spec.tfReplicaSpecs must map replica "
                            f"types to their groups ({job.api_version})")
    seen: dict[str, str] = {}
    out = []
    for written, item in specs.items():
        at = f"spec.tfReplicaSpecs.{written}"
        role = _role(job, written, at, seen)
        if not isinstance(item, dict):
            raise ManifestError(f"{job.where}: {job.ref} {at}: not a mapping")
        out.append(Replica(
            role=role, written=str(written),
            template=("spec", "tfReplicaSpecs", written, "template"),
            replicas=job.take("spec", "tfReplicaSpecs", written, "replicas"),
            restart_policy=job.take("spec", "tfReplicaSpecs", written, "restartPolicy"),
        ))
    return out


def _run_policy(job: Manifest) -> dict[str, Any]:
    """The run policy wherever this version keeps it (`spec.runPolicy` wins over `spec`)."""
    policy: dict[str, Any] = {}
    for where in (("spec",), ("spec", "runPolicy")):
        for name in RUN_POLICY_FIELDS:
            value = job.take(*where, name)
            if value is not None:
                policy[name] = value
    return policy


def read_job(job: Manifest) -> Job:
    """A TFJob manifest of any supported version -> `Job`; ManifestError for what the operator
    would not run either (unknown replica types, a version it never had)."""
    if job.api_version not in API_VERSIONS:
        raise ManifestError(
            f"{job.where}: {job.ref}: apiVersion {job.api_version!r} is not a TFJob version "
            f"tfgen reads ({', '.join(API_VERSIONS)})")
    job.take("apiVersion")
    job.take("kind")
    replicas = _v1alpha1(job) if job.api_version.endswith("/v1alpha1") else _replica_map(job)
    return Job(job, replicas, _run_policy(job), RUNTIME.name)
