"""The JobSet runtime: a JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.12) with one replicated
job per role, each an Indexed Job of the role's replicas. No controller computes TF_CONFIG: the
chart writes it into every pod, exactly as training-operator v1.9 would (the task index from
the Job's completion index), with a headless Service per task named as the operator names it.
What a Job cannot express of the operator's run policy is refused at the spec's line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .. import naming
from .base import PodTemplate, Refusal, Runtime
from .tfjob import TFJOB

# The labels the JobSet controller and the Job controller set on a JobSet's pods: the
# NetworkPolicy selects a run's pods by the first, each task's Service its pod by all three.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
# The Job controller also writes the index as this annotation on every pod (a label only from
# Kubernetes 1.28 on): the env var the chart declares before TF_CONFIG reads it.
COMPLETION_INDEX_ANNOTATION = COMPLETION_INDEX_LABEL
INDEX_ENV = "JOB_COMPLETION_INDEX"
# The random suffix Kubernetes gives a Job's pod names (`<job>-<index>-xxxxx`); the JobSet
# webhook counts it when it checks the longest pod name.
POD_NAME_RANDOM = "-xxxxx"
# A Job's successPolicy (succeededIndexes) is GA from this Kubernetes minor version.
JOB_SUCCESS_POLICY_SINCE = (1, 33)
# What of a started JobSet may change: its suspend (Kueue's, and the spec's). The replicated
# jobs, network, success, failure and startup policies are immutable.
MUTABLE = ("suspend",)


def _version(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    try:
        return int(major), int(minor.split(".")[0])
    except ValueError:
        return 0, 0


def _field(spec: Mapping[str, Any], *keys: str) -> Any:
    node: Any = spec
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


class JobSetRuntime(Runtime):
    name = "jobset"
    api_version = "jobset.x-k8s.io/v1alpha2"
    kind = "JobSet"
    described = "a JobSet (JobSet v0.12)"
    pod_names = "<run>-<role>-0-<index>-xxxxx"
    # the JobSet controller's terminal conditions (also its status.terminalState)
    finished_conditions = ("Completed", "Failed")
    mutable = MUTABLE

    def pod_templates(self, job: Mapping[str, Any]) -> Iterator[PodTemplate]:
        jobs = _field(job, "spec", "replicatedJobs")
        for index, replicated in enumerate(jobs if isinstance(jobs, list) else ()):
            template = _field(replicated, "template", "spec", "template")
            if isinstance(template, Mapping):
                role = str(_field(replicated, "name"))
                yield PodTemplate(f"$.spec.replicatedJobs[{index}].template.spec.template",
                                  naming.REPLICA_TYPES.get(role, role), template)

    def as_tfjob(self, job: Mapping[str, Any]) -> dict[str, Any]:
        # one replica type per replicated job, as many pods as its Indexed Job's completions
        specs = {}
        jobs = _field(job, "spec", "replicatedJobs")
        for replicated in jobs if isinstance(jobs, list) else ():
            template = _field(replicated, "template", "spec", "template")
            if isinstance(template, Mapping):
                role = str(_field(replicated, "name"))
                specs[naming.REPLICA_TYPES.get(role, role)] = {
                    "replicas": _field(replicated, "template", "spec", "completions") or 1,
                    "template": template}
        return {"apiVersion": TFJOB.api_version, "kind": TFJOB.kind,
                "metadata": job.get("metadata") or {}, "spec": {"tfReplicaSpecs": specs}}

    def longest_pod_suffix(self, replicas: Mapping[str, int]) -> str:
        # `<jobset>-<replicated job>-<job index>-<pod index>-xxxxx`, one Job per role
        return max((f"-{role}-0-{max(count - 1, 0)}{POD_NAME_RANDOM}"
                    for role, count in replicas.items()), key=len, default="")

    def run_selector(self, run: str) -> dict[str, str]:
        return {JOBSET_NAME_LABEL: run}

    def refusals(self, spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
        out = [_always(role, name) for name, role in _roles(spec)
               if _field(role, "restartPolicy") == "Always"]
        clean = _field(spec, "runPolicy", "cleanPodPolicy")
        if clean not in (None, "Running"):
            out.append(Refusal(("spec", "runPolicy", "cleanPodPolicy"),
                               f"cleanPodPolicy {clean} is not what a JobSet does: when it "
                               "finishes it deletes its still-running Jobs, as Running does",
                               "cleanPodPolicy: Running, or runtime: tfjob"))
        if _field(spec, "runPolicy", "schedulingPolicy"):
            out.append(Refusal(("spec", "runPolicy", "schedulingPolicy"),
                               "schedulingPolicy is the training operator's gang scheduling "
                               "(Volcano, scheduler-plugins); a JobSet is admitted as one "
                               "workload by Kueue instead",
                               "remove it and set spec.queue, or runtime: tfjob"))
        return out + _worker_zero(spec, kubernetes_version) + _index_env(spec)


def _roles(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    roles = _field(spec, "roles")
    for name in naming.ROLES:
        role = roles.get(name) if isinstance(roles, Mapping) else None
        if isinstance(role, Mapping):
            yield name, role


def _index_env(spec: Mapping[str, Any]) -> list[Refusal]:
    """The chart declares INDEX_ENV first in every container: a spec's own would shadow it."""
    places = [(("spec",), spec), *((("spec", "roles", name), role) for name, role in _roles(spec))]
    out = []
    for parts, owner in places:
        env = _field(owner, "env")
        for index, entry in enumerate(env if isinstance(env, list) else ()):
            if isinstance(entry, Mapping) and entry.get("name") == INDEX_ENV:
                out.append(Refusal((*parts, "env", index, "name"),
                                   f"{INDEX_ENV} is the task index the chart reads from the "
                                   "Job's completion index for TF_CONFIG",
                                   "read it, don't set it; or runtime: tfjob"))
    return out


def _always(role: Mapping[str, Any], name: str) -> Refusal:
    return Refusal(("spec", "roles", name, "restartPolicy"),
                   "restartPolicy Always is not possible in a Job: its pods must end",
                   "OnFailure (restart in place), Never, ExitCode, or runtime: tfjob")


def _worker_zero(spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
    """Without a chief or master, the operator's run succeeds when worker 0 does; a Job says
    so only with its successPolicy, GA from Kubernetes 1.33."""
    names = {name for name, _ in _roles(spec)}
    if (names & set(naming.LEADER_ROLES) or "worker" not in names
            or _field(spec, "runPolicy", "successPolicy") == "AllWorkers"
            or _version(kubernetes_version) >= JOB_SUCCESS_POLICY_SINCE):
        return []
    since = ".".join(map(str, JOB_SUCCESS_POLICY_SINCE))
    return [Refusal(("spec", "runtime"),
                    "without a chief or master a run succeeds when worker 0 does; on runtime "
                    f"jobset that is the Job successPolicy, GA from Kubernetes {since}, and "
                    f"tfgen.yaml's kubernetesVersion is {kubernetes_version}",
                    "set runPolicy.successPolicy: AllWorkers, add a chief, raise "
                    "kubernetesVersion, or runtime: tfjob")]


JOBSET = JobSetRuntime()
