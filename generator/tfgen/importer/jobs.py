"""The input's training jobs, each read by the runtime of its kind into one shape (`Job`).

A runtime knows its job (`repo/runtimes`, `Runtime.read_job`): where its roles' pod templates
are, how many replicas each has, every API version of its kind tfgen reads, what its
controller or tfgen's chart writes. Here the manifest it read stays with what it read, and the
Services each task's runtime makes are found, to be set aside.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..repo import runtimes
from ..repo.runtimes.imported import Replica
from .manifests import Manifest

__all__ = ["Job", "Replica", "read_job", "task_services"]


@dataclass
class Job:
    """A training job of any runtime and version in one shape: the manifest it came from, its
    replica groups, its run policy and its runtime (the spec's `spec.runtime`)."""

    manifest: Manifest
    replicas: list[Replica]
    run_policy: dict[str, Any]
    runtime: str


def read_job(manifest: Manifest) -> Job:
    """A training job (a manifest of one of the runtimes' kinds) as its runtime reads it;
    ManifestError for what the runtime refuses."""
    runtime = runtimes.of_kind(manifest.kind)
    read = runtime.read_job(manifest)
    return Job(manifest, read.replicas, read.run_policy, read.runtime)


def _task(service: str, job: Job) -> bool:
    """Whether `service` is named as the runtime names a task's Service, `<job>-<role>-<index>`
    (the index below the role's replicas, written as Kubernetes writes a number)."""
    for replica in job.replicas:
        prefix = f"{job.manifest.name}-{replica.role}-"
        index = service[len(prefix):] if service.startswith(prefix) else ""
        count = replica.replicas if type(replica.replicas) is int else 1
        if (index.isascii() and index.isdigit() and len(index) <= len(str(count))
                and index == str(int(index)) and int(index) < count):
            return True
    return False


def task_services(job: Job, manifests: list[Manifest]) -> list[Manifest]:
    """The headless Service of each task the runtime makes (the training operator for a
    TFJob, the chart for a JobSet), as a render of the chart or a cluster export holds them."""
    return [m for m in manifests if m.kind == "Service" and _task(m.name, job)
            and m.namespace in ("", job.manifest.namespace)]
