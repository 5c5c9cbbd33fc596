"""The TFJob runtime: a Kubeflow TFJob (kubeflow.org/v1) run by training-operator v1.9, which
makes a pod and a headless Service per task and injects TF_CONFIG itself."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .. import naming
from .base import PodTemplate, Refusal, Runtime


class TFJobRuntime(Runtime):
    name = "tfjob"
    api_version = "kubeflow.org/v1"
    kind = "TFJob"
    described = "a Kubeflow TFJob (training-operator v1.9)"
    pod_names = "<run>-<role>-<index>"
    # the operator's terminal conditions (its Suspended and Restarting are not)
    finished_conditions = ("Succeeded", "Failed")

    def pod_templates(self, job: Mapping[str, Any]) -> Iterator[PodTemplate]:
        spec = job.get("spec")
        replicas = spec.get("tfReplicaSpecs") if isinstance(spec, Mapping) else None
        for rtype, replica in (replicas.items() if isinstance(replicas, Mapping) else ()):
            template = replica.get("template") if isinstance(replica, Mapping) else None
            if isinstance(template, Mapping):
                yield PodTemplate(f"$.spec.tfReplicaSpecs.{rtype}.template", str(rtype), template)

    def as_tfjob(self, job: Mapping[str, Any]) -> dict[str, Any]:
        return dict(job)

    def longest_pod_suffix(self, replicas: Mapping[str, int]) -> str:
        # the operator's pods (and Services) are `<job>-<type>-<index>`
        return max((f"-{role}-{max(count - 1, 0)}" for role, count in replicas.items()),
                   key=len, default="")

    def run_selector(self, run: str) -> dict[str, str]:
        return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: run}

    def refusals(self, spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
        return []  # the operator runs everything the spec schema allows


# The labels training-operator v1.9 puts on every pod of a TFJob (GenLabels in the common job
# controller, plus replica type and index in its pod reconciler; job-role on the Chief or
# Master, or on worker 0 of a job with neither). The chart's NetworkPolicy selects on the first
# two, and a test holds the chart and these in step.
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
OPERATOR_NAME = "tfjob-controller"  # the TFJob controller's name in the operator
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"  # the replica type, lower-cased
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"


def operator_pod_labels(
    job: str, replica_types: tuple[str, ...] | list[str] | set[str], replica_type: str,
    index: int,
) -> dict[str, str]:
    """The labels the operator sets on pod `index` of `replica_type` of TFJob `job`, whose
    replica types are `replica_types`."""
    labels = {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job,
              REPLICA_TYPE_LABEL: replica_type.lower(), REPLICA_INDEX_LABEL: str(index)}
    if any(t in replica_types for t in naming.LEADER_REPLICA_TYPES):
        leader = replica_type in naming.LEADER_REPLICA_TYPES
    else:
        leader = replica_type == "Worker" and index == 0
    if leader:
        labels[JOB_ROLE_LABEL] = "master"
    return labels


TFJOB = TFJobRuntime()
