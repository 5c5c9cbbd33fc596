"""The JobSet runtime: a JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.12) with one replicated
job per role, each an Indexed Job of the role's replicas. No controller computes TF_CONFIG: the
chart writes it into every pod, exactly as training-operator v1.9 would (the task index from
the Job's completion index), with a headless Service per task named as the operator names it.
What a Job cannot express of the operator's run policy is refused at the spec's line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ...errors import InputError
from .. import naming
from . import tfconfig, tfconfig_size
from .base import (
    CONTAINER,
    TF_CONFIG_ENV,
    VERSION_SOURCE,
    JobProblem,
    PodTemplate,
    Refusal,
    Runtime,
    frozen_spec_changes,
    listed,
)
from .changes import LiveChange
from .imported import ImportedJob, JobSource
from .indexedjob import (
    COMPLETION_INDEX_LABEL,
    INDEX_ENV,
    JOB_POD_FAILURE_POLICY_SINCE,
    JOB_SUCCESS_POLICY_SINCE,
    POD_NAME_RANDOM,
    pod_env,
)
from .jobset_import import read_jobset
from .tfjob import TFJOB

# The labels the JobSet controller and the Job controller set on a JobSet's pods: the
# NetworkPolicy selects a run's pods by the first, each task's Service its pod by all three
# (the third, the Job's, `indexedjob.COMPLETION_INDEX_LABEL`).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
# What of a started JobSet may change: its suspend (Kueue's, and the spec's). The replicated
# jobs, network, success, failure and startup policies are immutable.
MUTABLE = ("suspend",)


# The env the chart writes for the runtime, which the operator's TFJob does not have (it
# injects TF_CONFIG itself, and has no completion index).
RUNTIME_ENV = (INDEX_ENV, TF_CONFIG_ENV)


def _operator_template(template: Mapping[str, Any]) -> dict[str, Any]:
    """A pod template as the training operator's TFJob holds it: without the runtime's env.
    Anything not shaped as Kubernetes shapes it is kept as it is, for the schema to refuse."""
    spec = template.get("spec")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("containers"), list):
        return dict(template)
    containers = spec["containers"]
    return {**template, "spec": {**spec, "containers": [_operator_container(c)
                                                        for c in containers]}}


def _operator_container(container: Any) -> Any:
    if not isinstance(container, Mapping) or container.get("name") != CONTAINER:
        return container
    env = container.get("env")
    if not isinstance(env, list):
        return container
    return {**container, "env": [e for e in env
                                 if not (isinstance(e, Mapping) and e.get("name") in RUNTIME_ENV)]}


def _replicated_problems(where: str, replicated: Any) -> list[JobProblem]:
    """One replicated job as tfgen's runtime needs it: a role, one Indexed Job of its tasks."""
    name, spec = _field(replicated, "name"), _field(replicated, "template", "spec")
    checks = (
        (name not in naming.ROLES, f"{where}.name", f"replicated job {name!r} is not a role",
         f"one of {', '.join(naming.ROLES)}"),
        (_field(replicated, "replicas") != 1, f"{where}.replicas",
         "a role is one Job (its tasks are the Job's completion indexes)", "replicas: 1"),
        (_field(spec, "completionMode") != "Indexed", f"{where}.template.spec.completionMode",
         "each task's index is its Job completion index", "completionMode: Indexed"),
        (_field(spec, "parallelism") != _field(spec, "completions"),
         f"{where}.template.spec.parallelism", "every task of a TensorFlow cluster runs at once",
         "parallelism equal to completions"),
    )
    return [JobProblem(pointer, message, hint) for failed, pointer, message, hint in checks
            if failed]


def _task_problems(template: PodTemplate, pods: list[tfconfig.Pod]) -> list[JobProblem]:
    """The first task of the template's role (`pods`, the operator's) whose TF_CONFIG is not
    the operator's. Each pod's is made when compared: a job of two thousand pods would
    otherwise hold two thousand copies of its cluster."""
    containers = listed((template.spec or {}).get("containers"))
    index = next((i for i, c in enumerate(containers)
                  if isinstance(c, Mapping) and c.get("name") == CONTAINER), None)
    if index is None:
        return []  # said by the container rule
    for task in pods:
        got, tf_config = pod_env(containers[index], task.index).get(TF_CONFIG_ENV), task.tf_config
        if got != tf_config:
            return [JobProblem(f"{template.pointer}.spec.containers[{index}].env",
                               f"{task.replica_type} {task.index} would see TF_CONFIG {got!r}; "
                               f"the training operator gives it {tf_config!r}",
                               "leave TF_CONFIG to tfgen's chart")]
    return []


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
    controller = "the JobSet controller"
    pod_names = "<run>-<role>-0-<index>-xxxxx"
    tf_config_by = "written by the chart, as the training operator would set it,"
    # the JobSet controller's labels, and the Job controller's on an Indexed Job's pods
    label_prefixes = ("jobset.sigs.k8s.io/", "batch.kubernetes.io/")
    ttl_keys = ("spec", "ttlSecondsAfterFinished")
    kueue_framework = "jobset.x-k8s.io/jobset"
    kueue_framework_by_default = True
    health_lua = "jobset-health.lua"
    pod_templates_jq = ".spec.replicatedJobs[]?.template.spec.template"
    # the JobSet controller's terminal conditions (also its status.terminalState)
    succeeded_condition, failed_condition = "Completed", "Failed"
    plural = "jobsets"
    suspend_keys = ("spec", "suspend")

    def pod_templates(self, job: Mapping[str, Any]) -> Iterator[PodTemplate]:
        jobs = _field(job, "spec", "replicatedJobs")
        for index, replicated in enumerate(jobs if isinstance(jobs, list) else ()):
            template = _field(replicated, "template", "spec", "template")
            if isinstance(template, Mapping):
                role = str(_field(replicated, "name"))
                owner = f"$.spec.replicatedJobs[{index}]"
                yield PodTemplate(f"{owner}.template.spec.template",
                                  naming.REPLICA_TYPES.get(role, role), template, owner)

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
                    "template": _operator_template(template)}
        return {"apiVersion": TFJOB.api_version, "kind": TFJOB.kind,
                "metadata": job.get("metadata") or {}, "spec": {"tfReplicaSpecs": specs}}

    def shape_problems(self, job: Mapping[str, Any]) -> list[JobProblem]:
        jobs = _field(job, "spec", "replicatedJobs")
        if not isinstance(jobs, list) or not jobs:
            return [JobProblem("$.spec.replicatedJobs", "no replicated jobs")]
        names = [_field(replicated, "name") for replicated in jobs]
        out = []
        if sum(role in names for role in naming.LEADER_ROLES) > 1:
            out.append(JobProblem("$.spec.replicatedJobs", "both chief and master are set; "
                                  "TensorFlow's cluster has one of them", "keep one"))
        for index, replicated in enumerate(jobs):
            out += _replicated_problems(f"$.spec.replicatedJobs[{index}]", replicated)
        return out

    def tf_config_problems(self, job: Mapping[str, Any], cluster_domain: str) -> list[JobProblem]:
        """Each pod's TF_CONFIG, expanded as the kubelet expands it for the pod's index, must
        be the operator's for the TFJob this JobSet stands for, with the same domain, and
        within what a process can be given."""
        try:
            pods = tfconfig.pods(self.as_tfjob(job), cluster_domain)
        except (InputError, AttributeError, TypeError, ValueError):
            # a shape the operator refuses (shape_problems says why), or nodes of types the
            # JobSet's schema refuses (its problems say why): no cluster to compare with
            return []
        out = tfconfig_size.tf_config_size_problems(self.as_tfjob(job), cluster_domain,
                                                    "$.spec.replicatedJobs")
        for template in self.pod_templates(job):
            out += _task_problems(template, [p for p in pods
                                             if p.replica_type == template.replica_type])
        return out

    def given_env(self, index: int) -> dict[str, str]:
        # the Job controller gives every pod of an Indexed Job its completion index (and the
        # chart declares it from the pod's annotation, first)
        return {INDEX_ENV: str(index)}

    def pod_name(self, run: str, role: str, index: int) -> str:
        # `<jobset>-<replicated job>-<job index>-<pod index>-xxxxx`, one Job per role
        return f"{run}-{role}-0-{index}{POD_NAME_RANDOM}"

    def run_selector(self, run: str) -> dict[str, str]:
        return {JOBSET_NAME_LABEL: run}

    def pod_place(self, labels: Mapping[str, str]) -> tuple[str, str, int] | None:
        # one replicated job per role, named by the role; the pod's index is its Job's
        # completion index
        run, role = labels.get(JOBSET_NAME_LABEL), labels.get(REPLICATED_JOB_LABEL)
        index = labels.get(COMPLETION_INDEX_LABEL, "")
        if not run or not role or not index.isdigit():
            return None
        return run, role, int(index)

    def refusals(self, spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
        out = [_always(role, name) for name, role in _roles(spec)
               if _field(role, "restartPolicy") == "Always"]
        out += [_exit_code(name, kubernetes_version) for name, role in _roles(spec)
                if _field(role, "restartPolicy") == "ExitCode"
                and _version(kubernetes_version) < JOB_POD_FAILURE_POLICY_SINCE]
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

    def live_changes(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[LiveChange]:
        return frozen_spec_changes(self, old, new, MUTABLE)

    def read(self, job: JobSource) -> ImportedJob:
        return read_jobset(job, self.as_tfjob(job.doc), self.name)




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


def _exit_code(name: str, kubernetes_version: str) -> Refusal:
    since = ".".join(map(str, JOB_POD_FAILURE_POLICY_SINCE))
    return Refusal(("spec", "roles", name, "restartPolicy"),
                   "restartPolicy ExitCode is the Job podFailurePolicy on runtime jobset, on by "
                   f"default from Kubernetes {since} (alpha and off before: the API server "
                   f"drops it, and every failure fails the run); {VERSION_SOURCE} is "
                   f"{kubernetes_version}",
                   "OnFailure or Never, raise kubernetesVersion, or runtime: tfjob")


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
                    f"{VERSION_SOURCE} is {kubernetes_version}",
                    "set runPolicy.successPolicy: AllWorkers, add a chief, raise "
                    "kubernetesVersion, or runtime: tfjob")]


JOBSET = JobSetRuntime()
