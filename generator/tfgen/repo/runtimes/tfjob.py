"""The TFJob runtime: a Kubeflow TFJob (kubeflow.org/v1) run by training-operator v1.9, which
makes a pod and a headless Service per task and injects TF_CONFIG itself."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .. import naming
from .base import JobProblem, PodTemplate, Refusal, Runtime, env_entries


class TFJobRuntime(Runtime):
    name = "tfjob"
    api_version = "kubeflow.org/v1"
    kind = "TFJob"
    described = "a Kubeflow TFJob (training-operator v1.9)"
    controller = "the training operator"
    pod_names = "<run>-<role>-<index>"
    ttl_keys = ("spec", "runPolicy", "ttlSecondsAfterFinished")
    health_lua = "tfjob-health.lua"
    suspend_pointer = "/spec/runPolicy/suspend"
    pod_specs_jq = ".spec.tfReplicaSpecs[]?.template.spec"
    # the operator's terminal conditions (its Suspended and Restarting are not)
    finished_conditions = ("Succeeded", "Failed")

    def pod_templates(self, job: Mapping[str, Any]) -> Iterator[PodTemplate]:
        spec = job.get("spec")
        replicas = spec.get("tfReplicaSpecs") if isinstance(spec, Mapping) else None
        for rtype, replica in (replicas.items() if isinstance(replicas, Mapping) else ()):
            template = replica.get("template") if isinstance(replica, Mapping) else None
            if isinstance(template, Mapping):
                owner = f"$.spec.tfReplicaSpecs.{rtype}"
                yield PodTemplate(f"{owner}.template", str(rtype), template, owner)

    def as_tfjob(self, job: Mapping[str, Any]) -> dict[str, Any]:
        return dict(job)

    def shape_problems(self, job: Mapping[str, Any]) -> list[JobProblem]:
        spec = job.get("spec")
        replicas = spec.get("tfReplicaSpecs") if isinstance(spec, Mapping) else None
        if not isinstance(replicas, Mapping) or not replicas:
            return [JobProblem("$.spec.tfReplicaSpecs", "no replica specs")]
        out = []
        if sum(rtype in replicas for rtype in naming.LEADER_REPLICA_TYPES) > 1:
            out.append(JobProblem("$.spec.tfReplicaSpecs", "both Chief and Master are set; the "
                                  "operator allows one of them", "keep one of Chief or Master"))
        for rtype, replica in replicas.items():
            out += _replica_problems(str(rtype), replica if isinstance(replica, Mapping) else {})
        return out

    def tf_config_problems(self, job: Mapping[str, Any]) -> list[JobProblem]:
        # the operator sets TF_CONFIG per pod: a fixed value in the template breaks the cluster
        return [JobProblem(pointer, "TF_CONFIG is set in the template; the operator sets it per "
                           "pod and a fixed value breaks the cluster spec", "remove TF_CONFIG")
                for template in self.pod_templates(job)
                for pointer, entry in env_entries(template) if entry.get("name") == "TF_CONFIG"]

    def longest_pod_suffix(self, replicas: Mapping[str, int]) -> str:
        # the operator's pods (and Services) are `<job>-<type>-<index>`
        return max((f"-{role}-{max(count - 1, 0)}" for role, count in replicas.items()),
                   key=len, default="")

    def run_selector(self, run: str) -> dict[str, str]:
        return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: run}

    def refusals(self, spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
        return []  # the operator runs everything the spec schema allows


_SINGLE = {naming.REPLICA_TYPES[role] for role in naming.SINGLE_REPLICA_ROLES}


def _replica_problems(rtype: str, replica: Mapping[str, Any]) -> list[JobProblem]:
    """The operator's rules for one replica spec: a type it knows, one replica where one is
    all it supports."""
    where = f"$.spec.tfReplicaSpecs.{rtype}"
    if rtype not in naming.REPLICA_TYPES.values():
        return [JobProblem(where, f"unknown replica type {rtype!r}",
                           f"one of {', '.join(naming.REPLICA_TYPES.values())}")]
    count = replica.get("replicas", 1)
    if rtype in _SINGLE and isinstance(count, int) and count > 1:
        return [JobProblem(f"{where}.replicas", f"{rtype} has {count} replicas; the operator "
                           "supports one", "set replicas: 1")]
    return []


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
