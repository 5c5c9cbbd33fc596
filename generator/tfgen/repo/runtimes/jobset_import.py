"""How `tfgen import` reads a JobSet back into the spec's shape: the inverse of the chart's
`runtime: jobset`.

The runtime says which TFJob a JobSet stands for (`Runtime.as_tfjob`: one replica type per
replicated job, its Indexed Job's completions as the replicas, the same pod template), so the
TFJob mapping (`importer/`) reads its pod templates where they are, and every message names
the JobSet's own fields. What only a JobSet says is read here: the Job's restart policy
(ExitCode is `Never` plus the operator's exit-code rule as a podFailurePolicy), the run policy
the chart spreads over every Job, the success policy. A JobSet of another shape (several copies
of a Job, a NonIndexed Job, fewer pods at once than tasks, a replicated job named after no
role) would not be the same training once imported: it is refused at the document's line.
What the chart writes for the runtime (the task index, TF_CONFIG, the port, each task's
Service) is set aside as the runtime's own: tfgen writes it again from the spec.
"""

from __future__ import annotations

from typing import Any

from .. import naming
from .base import CONTAINER, PORT, PORT_NAME
from .imported import ImportedJob, JobSource, Path_, Replica
from .indexedjob import COMPLETION_INDEX_ANNOTATION, INDEX_ENV

INDEXED = "Indexed"
# What the chart writes on every JobSet and every replicated job, whatever the spec: taken
# when the input holds these values (the JobSet's and the Job's defaults, written out).
CHART_FIELDS: tuple[tuple[Path_, Any], ...] = (
    (("spec", "network"), {"enableDNSHostnames": True, "publishNotReadyAddresses": True}),
    (("spec", "startupPolicy"), {"startupPolicyOrder": "AnyOrder"}),
)
REPLICATED_FIELDS: tuple[tuple[Path_, Any], ...] = (
    (("groupName",), "default"),
    (("replicas",), 1),
    (("template", "spec", "completionMode"), INDEXED),
)
# The training operator's ExitCode restart policy as a Job says it (the chart's exitCodePolicy):
# exit codes 128-255 (killed by a signal) are retried, any other failure fails the job.
EXIT_CODE_POLICY = {"rules": [
    {"action": "Count", "onExitCodes": {"containerName": CONTAINER, "operator": "In",
                                        "values": list(range(128, 256))}},
    {"action": "FailJob", "onExitCodes": {"containerName": CONTAINER,
                                          "operator": "NotIn", "values": [0]}},
]}
# The run-policy fields the chart writes on every role's Job alike.
JOB_RUN_POLICY = ("activeDeadlineSeconds", "backoffLimit")
# The environment the chart writes ahead of the spec's own in the TensorFlow container.
INDEX_SOURCE = {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"}}
TF_CONFIG = "TF_CONFIG"


def _count(value: Any, default: Any) -> Any:
    return default if value is None else value


def _checked(job: JobSource, index: int, seen: set[str]) -> str:
    """The role replicated job `index` runs; refused when it is not of the chart's shape."""
    at: Path_ = ("spec", "replicatedJobs", index)
    item = job.get(*at)
    name = item.get("name") if isinstance(item, dict) else None
    if name not in naming.ROLES:
        raise job.refused((*at, "name"), f"{name!r} names no role; tfgen names each "
                          f"replicated job after its role ({', '.join(naming.ROLES)})")
    if name in seen:
        raise job.refused((*at, "name"), f"a second replicated job {name!r}; one per role")
    seen.add(str(name))
    replicas = _count(job.get(*at, "replicas"), 1)
    if replicas != 1:
        raise job.refused((*at, "replicas"), f"{replicas!r} copies of the Job; tfgen runs "
                          "one Job per role, its pods the role's replicas (replicas: 1)")
    spec = (*at, "template", "spec")
    mode = _count(job.get(*spec, "completionMode"), INDEXED)
    if mode != INDEXED:
        raise job.refused((*spec, "completionMode"), f"{mode!r}; TensorFlow's tasks need "
                          "the index of an Indexed Job (completionMode: Indexed)")
    completions = job.get(*spec, "completions")
    if type(completions) is not int or completions < 1:
        raise job.refused((*spec, "completions"), f"{completions!r}; the number of the "
                          "role's tasks, a whole number of at least 1")
    parallelism = _count(job.get(*spec, "parallelism"), 1)
    if parallelism != completions:
        raise job.refused((*spec, "parallelism"), f"{parallelism!r}, and completions "
                          f"{completions}; every task of a TensorFlow cluster runs at once "
                          "(parallelism = completions)")
    if not isinstance(job.get(*spec, "template", "spec"), dict):
        raise job.refused((*spec, "template", "spec"), "no pod template")
    _containers_checked(job, (*spec, "template", "spec"))
    return str(name)


def _containers_checked(job: JobSource, pod: Path_) -> None:
    """The containers and their env as Kubernetes takes them (lists of mappings), before the
    runtime reads them as the TFJob they stand for; refused at the first that is not."""
    for index, container in enumerate(job.sequence(*pod, "containers")):
        if not isinstance(container, dict):
            raise job.refused((*pod, "containers", index), "not a mapping")
        for number, entry in enumerate(job.sequence(*pod, "containers", index, "env")):
            if not isinstance(entry, dict):
                raise job.refused((*pod, "containers", index, "env", number),
                                  "not a mapping (name and value or valueFrom)")


def _restart_policy(job: JobSource, at: Path_) -> str | None:
    """The role's restartPolicy from its Job's pods: ExitCode is Never with the operator's
    exit-code rule; absent is what the JobSet webhook defaults (OnFailure)."""
    pod = job.get(*at, "template", "spec", "template", "spec", "restartPolicy")
    if pod == "Never" and job.get(*at, "template", "spec", "podFailurePolicy") == (
            EXIT_CODE_POLICY):
        job.take(*at, "template", "spec", "podFailurePolicy")
        job.take(*at, "template", "spec", "template", "spec", "restartPolicy")
        return "ExitCode"
    if isinstance(pod, str):
        return str(job.take(*at, "template", "spec", "template", "spec", "restartPolicy"))
    return None


def _set_aside(job: JobSource, at: Path_) -> None:
    """The chart's own environment and port in the TensorFlow container of replicated job
    `at`: the runtime's."""
    pod: Path_ = (*at, "template", "spec", "template", "spec")
    containers = job.get(*pod, "containers")
    for index, container in enumerate(containers if isinstance(containers, list) else ()):
        if not isinstance(container, dict) or container.get("name") != CONTAINER:
            continue
        for number, entry in enumerate(job.sequence(*pod, "containers", index, "env")):
            if _written_for_the_runtime(entry):
                job.runtime_made((*pod, "containers", index, "env", number))
        if container.get("ports") == [{"name": PORT_NAME, "containerPort": PORT,
                                       "protocol": "TCP"}]:
            job.runtime_made((*pod, "containers", index, "ports"))


def _written_for_the_runtime(entry: Any) -> bool:
    """An env entry the chart writes for the runtime: TF_CONFIG, or the task index read from
    the Job's completion index."""
    if not isinstance(entry, dict):
        return False
    if entry.get("name") == TF_CONFIG:
        return True
    return entry.get("name") == INDEX_ENV and entry.get("valueFrom") == INDEX_SOURCE


def _same(job: JobSource, groups: list[Path_], *parts: str) -> Any:
    """The value every replicated job holds at `parts` (taken), None when they differ (each
    left out with the reason) or none holds one."""
    values = [job.get(*at, *parts) for at in groups]
    if any(value != values[0] for value in values):
        why = (f"the spec sets runPolicy.{parts[-1]} once for every role, and the replicated "
               "jobs differ")
        for at in groups:
            job.leave_out((*at, *parts), why)
        return None
    for at in groups:
        job.take(*at, *parts)
    return values[0]


def _success(job: JobSource, roles: dict[str, Path_]) -> dict[str, Any]:
    """runPolicy.successPolicy from the JobSet's success policy, when it is the chart's."""
    leader = next((role for role in naming.LEADER_ROLES if role in roles), None)
    given = job.get("spec", "successPolicy")
    worker = roles.get("worker")
    zero = (*worker, "template", "spec", "successPolicy") if worker else None
    if leader is not None:
        if given == {"operator": "Any", "targetReplicatedJobs": [leader]}:
            job.take("spec", "successPolicy")
    elif given == {"operator": "All", "targetReplicatedJobs": ["worker"]}:
        job.take("spec", "successPolicy")
        return {"successPolicy": "AllWorkers"}
    elif zero and given == {"operator": "Any", "targetReplicatedJobs": ["worker"]} and (
            job.get(*zero) == {"rules": [{"succeededIndexes": "0"}]}):
        job.take("spec", "successPolicy")
        job.take(*zero)
    return {}


def _run_policy(job: JobSource, roles: dict[str, Path_]) -> dict[str, Any]:
    groups = list(roles.values())
    policy: dict[str, Any] = {}
    for name in JOB_RUN_POLICY:
        value = _same(job, groups, "template", "spec", name)
        if value is not None:
            policy[name] = value
    if job.get("spec", "suspend") is not None:
        policy["suspend"] = job.take("spec", "suspend")
    return {**policy, **_success(job, roles)}


def read_jobset(job: JobSource, view: dict[str, Any], runtime: str) -> ImportedJob:
    """A JobSet of the shape the chart renders -> its replica groups where its pod templates
    are; refused for any other shape. `view` is the TFJob the JobSet stands for
    (`Runtime.as_tfjob`): which replica type and how many replicas each pod template is."""
    replicated = job.sequence("spec", "replicatedJobs")
    if not replicated:
        raise job.refused(("spec", "replicatedJobs"), "no replicated jobs; tfgen's "
                          "JobSet has one per role")
    seen: set[str] = set()
    roles: dict[str, Path_] = {_checked(job, index, seen): ("spec", "replicatedJobs", index)
                               for index in range(len(replicated))}
    specs = view["spec"]["tfReplicaSpecs"]
    replicas = []
    for role, at in roles.items():
        _set_aside(job, at)
        for parts, written in REPLICATED_FIELDS:
            if _count(job.get(*at, *parts), written) == written:
                job.take(*at, *parts)
        job.take(*at, "name")
        job.take(*at, "template", "spec", "completions")
        job.take(*at, "template", "spec", "parallelism")
        replicas.append(Replica(role, role, (*at, "template", "spec", "template"),
                                specs[naming.REPLICA_TYPES[role]]["replicas"],
                                _restart_policy(job, at)))
    for parts, written in CHART_FIELDS:
        if job.get(*parts) == written:
            job.take(*parts)
    job.take("apiVersion")
    job.take("kind")
    return ImportedJob(replicas, _run_policy(job, roles), runtime)
