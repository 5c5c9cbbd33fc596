"""The TFJob runtime: a Kubeflow TFJob (kubeflow.org/v1) run by training-operator v1.9, which
makes a pod and a headless Service per task and injects TF_CONFIG itself. It stores a change to
a started TFJob and never acts on it (`live_changes`), and `tfgen import` reads TFJobs of every
API version the kind had (`read`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .. import naming
from . import tfconfig_size
from .base import PORT, TF_CONFIG_ENV, JobProblem, PodTemplate, Refusal, Runtime, env_entries
from .changes import ABSENT, LiveChange, change_text, changed_keys, leaf_changes
from .imported import ImportedJob, JobSource, Replica

# Every TFJob API version `tfgen import` reads, the oldest first (docs/running-experiments.md,
# "Import existing manifests", describes each conversion):
# - `v1alpha1`: `spec.replicaSpecs` is a list, each item naming its type in `tfReplicaType`
#   (MASTER, WORKER, PS); the restart policy is the pod template's; `spec.tfImage` is the
#   image of a container that names none; `tfPort` 2222 and a `terminationPolicy` ending the
#   job with MASTER 0 are what v1 does anyway.
# - `v1alpha2` and `v1beta1`: `spec.tfReplicaSpecs` maps the type (Master, Worker, PS, Chief,
#   Evaluator) to `replicas`, `restartPolicy` and `template`; `cleanPodPolicy`,
#   `activeDeadlineSeconds` and `backoffLimit` sit directly under `spec`.
# - `v1`: the same replica map; the run policy under `spec.runPolicy` (early v1 releases kept
#   it directly under `spec`, and both are read).
# Replica types are matched without regard to case, as the operator does.
API_VERSIONS = ("kubeflow.org/v1alpha1", "kubeflow.org/v1alpha2", "kubeflow.org/v1beta1",
                "kubeflow.org/v1")
# The run-policy fields the spec's runPolicy holds, under the names every version uses.
RUN_POLICY_FIELDS = ("cleanPodPolicy", "activeDeadlineSeconds", "backoffLimit", "suspend",
                     "schedulingPolicy")
# runPolicy fields the operator reads continuously; everything else is read once at start.
RUN_POLICY_LIVE = {"suspend", "activeDeadlineSeconds", "backoffLimit", "cleanPodPolicy"}
_ROLE_OF_TYPE = {replica_type.lower(): role for role, replica_type in naming.REPLICA_TYPES.items()}


class TFJobRuntime(Runtime):
    name = "tfjob"
    api_version = API_VERSIONS[-1]
    kind = "TFJob"
    described = "a Kubeflow TFJob (training-operator v1.9)"
    controller = "the training operator"
    pod_names = "<run>-<role>-<index>"
    tf_config_by = "set by the training operator"
    label_prefixes = ("training.kubeflow.org/",)
    ttl_keys = ("spec", "runPolicy", "ttlSecondsAfterFinished")
    kueue_framework = "kubeflow.org/tfjob"
    kueue_framework_by_default = False  # deprecated and off since v0.19
    health_lua = "tfjob-health.lua"
    pod_templates_jq = ".spec.tfReplicaSpecs[]?.template"
    # the operator's terminal conditions (its Suspended and Restarting are not)
    succeeded_condition, failed_condition = "Succeeded", "Failed"
    plural = "tfjobs"
    suspend_keys = ("spec", "runPolicy", "suspend")

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

    def tf_config_problems(self, job: Mapping[str, Any], cluster_domain: str) -> list[JobProblem]:
        # the operator sets TF_CONFIG per pod: a fixed value in the template breaks the cluster
        fixed = [JobProblem(pointer, "TF_CONFIG is set in the template; the operator sets it per "
                            "pod and a fixed value breaks the cluster spec", "remove TF_CONFIG")
                 for template in self.pod_templates(job)
                 for pointer, entry in env_entries(template) if entry.get("name") == TF_CONFIG_ENV]
        return fixed + tfconfig_size.tf_config_size_problems(job, cluster_domain,
                                                             "$.spec.tfReplicaSpecs")

    def pod_name(self, run: str, role: str, index: int) -> str:
        # the operator's pods (and Services) are `<job>-<type>-<index>`
        return f"{run}-{role}-{index}"

    def run_selector(self, run: str) -> dict[str, str]:
        return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: run}

    def pod_place(self, labels: Mapping[str, str]) -> tuple[str, str, int] | None:
        run, rtype = labels.get(JOB_NAME_LABEL), labels.get(REPLICA_TYPE_LABEL)
        index = labels.get(REPLICA_INDEX_LABEL, "")
        if labels.get(OPERATOR_NAME_LABEL) != OPERATOR_NAME or not run or not rtype \
                or not index.isdigit():
            return None
        return run, _ROLE_OF_TYPE.get(rtype, rtype), int(index)

    def refusals(self, spec: Mapping[str, Any], kubernetes_version: str) -> list[Refusal]:
        return []  # the operator runs everything the spec schema allows

    def live_changes(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[LiveChange]:
        """The operator reads replica specs and the start-time run policy once, when the job
        starts; a change is stored but never acted on, so the run in the cluster would silently
        differ from Git."""
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        old_r, new_r = old_spec.get("tfReplicaSpecs") or {}, new_spec.get("tfReplicaSpecs") or {}
        out = []
        for rtype in sorted(set(old_r) | set(new_r)):
            out += _replica_changes(rtype, old_r.get(rtype), new_r.get(rtype))
        old_p, new_p = old_spec.get("runPolicy") or {}, new_spec.get("runPolicy") or {}
        why = "the operator reads it only when the job starts"
        for key in changed_keys(old_p, new_p, RUN_POLICY_LIVE):
            out.append(LiveChange(f"$.spec.runPolicy.{key}", f"runPolicy.{key} changed; {why}",
                                  old_p.get(key, ABSENT), new_p.get(key, ABSENT), why))
        return out

    @property
    def read_versions(self) -> tuple[str, ...]:
        return API_VERSIONS

    def read(self, job: JobSource) -> ImportedJob:
        job.take("apiVersion")
        job.take("kind")
        replicas = (_v1alpha1(job) if job.api_version.endswith("/v1alpha1")
                    else _replica_map(job))
        return ImportedJob(replicas, _run_policy(job), self.name)


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


def _replica_changes(rtype: str, before: Any, after: Any) -> list[LiveChange]:
    """What changed in one replica spec of a started TFJob."""
    where = f"$.spec.tfReplicaSpecs.{rtype}"
    if before is None or after is None:
        why = "the operator does not re-read replica specs"
        return [LiveChange(where, f"replica type {rtype} "
                           f"{'added' if before is None else 'removed'} in a running TFJob ({why})",
                           before or ABSENT, after or ABSENT, why, rtype)]
    out = []
    if before.get("replicas") != after.get("replicas"):
        why = "TF_CONFIG of running pods keeps the old cluster"
        out.append(LiveChange(f"{where}.replicas", f"{rtype} replicas changed "
                              f"{before.get('replicas')} -> {after.get('replicas')}; {why}",
                              before.get("replicas"), after.get("replicas"), why, rtype))
    why = "running pods are not recreated from a changed template"
    for key in sorted((set(before) | set(after)) - {"replicas"}):
        if before.get(key) == after.get(key):
            continue
        for pointer, a, b in leaf_changes(before.get(key, ABSENT), after.get(key, ABSENT),
                                          f"{where}.{key}"):
            out.append(LiveChange(pointer, f"{rtype} {key} changed ({change_text(a, b)}); {why}",
                                  a, b, why, rtype))
    return out


def _role(job: JobSource, written: Any, at: tuple[str | int, ...], seen: dict[str, str]) -> str:
    """The spec role of replica type `written` (any case, as the operator reads it)."""
    role = _ROLE_OF_TYPE.get(str(written).lower())
    if role is None:
        known = ", ".join(naming.REPLICA_TYPES.values())
        raise job.refused(at, f"unknown replica type {written!r} (the operator knows {known}, "
                          "in any case)")
    if role in seen:
        raise job.refused(at, f"a second {naming.REPLICA_TYPES[role]} replica group (the first "
                          f"is {seen[role]}); merge them into one")
    seen[role] = str(written)
    return role


def _v1alpha1(job: JobSource) -> list[Replica]:
    specs = job.get("spec", "replicaSpecs")
    if not isinstance(specs, list) or not specs:
        raise job.refused((), "spec.replicaSpecs must list the replica groups "
                          "(kubeflow.org/v1alpha1)")
    tf_image = job.take("spec", "tfImage")
    _take_termination_policy(job)
    seen: dict[str, str] = {}
    out = []
    for index, item in enumerate(specs):
        at = ("spec", "replicaSpecs", index)
        if not isinstance(item, dict):
            raise job.refused(at, "not a mapping")
        written = job.take(*at, "tfReplicaType")
        if written is None:
            raise job.refused(at, "no tfReplicaType")
        role = _role(job, written, at, seen)
        if job.get(*at, "tfPort") == PORT:
            job.take(*at, "tfPort")
        out.append(Replica(
            role=role, written=str(written), template=(*at, "template"),
            replicas=job.take(*at, "replicas"),
            # v1alpha1 restarts pods by the pod's own policy; v1 moved it to the replica group
            restart_policy=job.take(*at, "template", "spec", "restartPolicy"),
            default_image=tf_image if isinstance(tf_image, str) else None,
        ))
    return out


def _take_termination_policy(job: JobSource) -> None:
    """v1alpha1's terminationPolicy, taken when it ends the job with master 0: what v1 does."""
    chief = job.get("spec", "terminationPolicy", "chief")
    if not isinstance(chief, dict) or str(chief.get("replicaName", "")).upper() != "MASTER":
        return
    if chief.get("replicaIndex", 0) == 0:
        job.take("spec", "terminationPolicy")


def _replica_map(job: JobSource) -> list[Replica]:
    specs = job.get("spec", "tfReplicaSpecs")
    if not isinstance(specs, dict) or not specs:
        raise job.refused((), "spec.tfReplicaSpecs must map replica types to their groups "
                          f"({job.api_version})")
    seen: dict[str, str] = {}
    out = []
    for written, item in specs.items():
        # (a key that is no text names no replica type: `_role` refuses it at its text)
        at = ("spec", "tfReplicaSpecs", str(written))
        role = _role(job, written, at, seen)
        if not isinstance(item, dict):
            raise job.refused(at, "not a mapping")
        out.append(Replica(role=role, written=str(written), template=(*at, "template"),
                           replicas=job.take(*at, "replicas"),
                           restart_policy=job.take(*at, "restartPolicy")))
    return out


def _run_policy(job: JobSource) -> dict[str, Any]:
    """The run policy wherever this version keeps it (`spec.runPolicy` wins over `spec`)."""
    policy: dict[str, Any] = {}
    for where in (("spec",), ("spec", "runPolicy")):
        for name in RUN_POLICY_FIELDS:
            value = job.take(*where, name)
            if value is not None:
                policy[name] = value
    return policy


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
