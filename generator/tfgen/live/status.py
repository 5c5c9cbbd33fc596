"""What runs of each experiment, in words: from the spec (what Git asks) and one snapshot of
the cluster (snapshot.py), with no call of its own.

Per run of an experiment: its phase, its pods ready per role, restarts, GPUs held, age, and
why it waits or failed, each said plainly: Kueue's Workload condition, the scheduler's reason
for a Pending pod, an image that cannot be pulled, a claim not bound. Per experiment: its Argo
CD Application's sync and health, a sync that failed, and where the cluster differs from what
the spec renders (a job edited by hand, a job tfgen did not render). Each runtime's jobs and
pods are read through its module (`repo/runtimes`), never by its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..repo import chart, naming, runtimes
from ..repo.runtimes import Runtime
from ..validate import Cluster
from ..validate.experiment import sweep
from ..validate.experiment.checked import lookup, roles
from .connect import Obj
from .snapshot import APPLICATIONS, CLAIMS, LOCAL_QUEUES, PODS, WORKLOADS, Snapshot, job_api

# The phases of a run, in words, in the order a run goes through them.
NOT_SYNCED, QUEUED, ADMITTED, STARTING, RUNNING = (
    "not yet synced", "queued", "admitted", "starting", "running")
SUCCEEDED, FAILED, SUSPENDED, RETIRED = "succeeded", "failed", "suspended", "retired"
PHASES = (NOT_SYNCED, QUEUED, ADMITTED, STARTING, RUNNING, SUCCEEDED, FAILED, SUSPENDED,
          RETIRED)
GPU = "nvidia.com/gpu"
INSTANCE_LABEL = "app.kubernetes.io/instance"  # the chart's: the experiment's name
# A container waiting for one of these will not start by itself.
STUCK_WAITING = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName",
                 "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff")


@dataclass(frozen=True)
class Wanted:
    """What the spec asks of the cluster: its runs, their roles, its queue, its claim."""

    name: str
    namespace: str
    runtime: Runtime
    runs: tuple[str, ...]
    replicas: dict[str, int]  # role -> replicas of one run
    queue: str
    retired: bool
    claim: str
    sweep: bool
    cluster: str  # tfgen.yaml's name of the cluster it runs on ("" for a repository without)
    context: str | None  # that cluster's kubeconfig context (None: the one given)

    @classmethod
    def of(cls, data: Mapping[str, Any], cluster: Cluster) -> Wanted:
        spec = dict(data["spec"])
        name = str(data["metadata"]["name"])
        claim = lookup(spec, "storage", "existingClaim")
        queue = spec.get("queue")
        return cls(name=name, namespace=str(data["metadata"]["namespace"]),
                   runtime=runtimes.by_name(spec.get("runtime")),
                   runs=tuple(naming.job_name(name, run.suffix) for run in sweep.runs(spec)),
                   replicas={role: int(r.get("replicas", 1)) for role, r in roles(spec)},
                   queue=queue if isinstance(queue, str) else "",
                   retired=spec.get(chart.LIFECYCLE_KEY) == chart.RETIRED,
                   claim=claim if isinstance(claim, str) else naming.claim_name(name),
                   sweep=sweep.has_sweep(spec),
                   cluster=cluster.name if cluster.declared else "", context=cluster.context)


@dataclass
class RunStatus:
    name: str
    phase: str
    pods: dict[str, tuple[int, int]] = field(default_factory=dict)  # role -> (ready, wanted)
    restarts: int = 0
    gpus: int = 0  # held by its scheduled pods
    started: str = ""  # the job's creationTimestamp
    why: list[str] = field(default_factory=list)
    failing: bool = False  # failed, or Kueue can never admit it

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "phase": self.phase,
                "pods": {role: {"ready": r, "wanted": w} for role, (r, w) in self.pods.items()},
                "restarts": self.restarts, "gpus": self.gpus, "started": self.started,
                "why": self.why, "failing": self.failing}


@dataclass
class ExperimentStatus:
    name: str
    namespace: str
    cluster: str
    runtime: str
    queue: str
    sync: str  # the Application's, "" without one
    health: str
    runs: list[RunStatus]
    sweep: bool
    why: list[str] = field(default_factory=list)
    app_failing: bool = False

    @property
    def failing(self) -> bool:
        return self.app_failing or any(run.failing for run in self.runs)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "namespace": self.namespace, "cluster": self.cluster,
                "runtime": self.runtime,
                "queue": self.queue, "sync": self.sync, "health": self.health,
                "failing": self.failing, "why": self.why,
                "runs": [run.as_dict() for run in self.runs]}


def status(wanted: Wanted, snap: Snapshot, apps: Snapshot, argocd_namespace: str
           ) -> ExperimentStatus:
    """One experiment's status, from what its spec asks, what its cluster holds (`snap`) and
    its Application (in `apps`, Argo CD's cluster's snapshot)."""
    app = apps.named(APPLICATIONS, argocd_namespace, wanted.name)
    out = ExperimentStatus(wanted.name, wanted.namespace, wanted.cluster, wanted.runtime.name,
                           wanted.queue,
                           sync=str(lookup(app, "status", "sync", "status") or ""),
                           health=str(lookup(app, "status", "health", "status") or ""),
                           runs=[], sweep=wanted.sweep)
    _application(app, wanted, argocd_namespace, APPLICATIONS in apps.not_served, out)
    api = job_api(wanted.runtime)
    if api in snap.not_served and not wanted.retired:
        out.why.append(f"the cluster does not serve {wanted.runtime.kind} "
                       f"({wanted.runtime.api_version}): is {wanted.runtime.controller} "
                       "installed?")
    pods = _pods_by_run(wanted, snap)
    for run in wanted.runs:
        job = snap.named(api, wanted.namespace, run)
        out.runs.append(_run(wanted, run, job, pods.get(run, []), snap))
    out.why += _claim(wanted, snap) + _foreign_jobs(wanted, snap)
    return out


def _application(app: Obj | None, wanted: Wanted, argocd_namespace: str, not_served: bool,
                 out: ExperimentStatus) -> None:
    if app is None:
        out.why.append("Argo CD is not installed where this context points" if not_served else
                       f"no Argo CD Application {wanted.name} in {argocd_namespace}: not merged "
                       "yet, or the ApplicationSet has not made it")
        return
    operation = lookup(app, "status", "operationState") or {}
    if operation.get("phase") in ("Failed", "Error"):
        out.app_failing = True
        out.why.append(f"sync failed: {_one_line(operation.get('message'))}")
    elif operation.get("phase") == "Running" and operation.get("retryCount"):
        # the sync policy's retries: each attempt failed so far, for the same reason
        out.app_failing = True
        out.why.append(f"sync failed, retrying (attempt {operation['retryCount']}): "
                       f"{_one_line(operation.get('message'))}")
    for condition in lookup(app, "status", "conditions") or []:
        if str(condition.get("type", "")).endswith("Error"):
            out.app_failing = True
            out.why.append(f"Argo CD: {condition['type']}: {_one_line(condition.get('message'))}")
    if out.health == "Degraded":
        out.app_failing = True
    if out.sync == "OutOfSync":
        for resource in lookup(app, "status", "resources") or []:
            if resource.get("status") != "OutOfSync":
                continue
            what = f"{resource.get('kind')} {resource.get('name')}"
            out.why.append(f"{what} is in the cluster but no longer in Git: Argo CD prunes it "
                           "at the next sync" if resource.get("requiresPruning") else
                           f"{what} differs from Git: changed in the cluster by hand, or a new "
                           "commit not synced yet")


def _run_keys(runtime: Runtime) -> Callable[[Obj], tuple[str, ...]]:
    def run_of(pod: Obj) -> tuple[str, ...]:
        place = runtime.pod_place(pod["metadata"].get("labels") or {})
        return (place[0],) if place else ()
    return run_of


# The snapshot's index keys, one function each (an index is kept per function).
_RUN_OF_POD = {runtime.name: _run_keys(runtime) for runtime in runtimes.RUNTIMES}


def _owners(obj: Obj) -> tuple[str, ...]:
    return tuple(str(o.get("uid")) for o in obj["metadata"].get("ownerReferences") or [])


def _instance(obj: Obj) -> tuple[str, ...]:
    value = (obj["metadata"].get("labels") or {}).get(INSTANCE_LABEL)
    return (value,) if value else ()


def _pods_by_run(wanted: Wanted, snap: Snapshot) -> dict[str, list[tuple[str, int, Obj]]]:
    """run -> (role, index, pod) of the runtime's pods in the namespace, for this
    experiment's runs."""
    index = snap.index(PODS, wanted.namespace, _RUN_OF_POD[wanted.runtime.name])
    out: dict[str, list[tuple[str, int, Obj]]] = {}
    for run in wanted.runs:
        for pod in index.get(run, ()):
            place = wanted.runtime.pod_place(pod["metadata"].get("labels") or {})
            if place is not None:
                out.setdefault(run, []).append((place[1], place[2], pod))
    return out


def _run(wanted: Wanted, run: str, job: Obj | None, pods: list[tuple[str, int, Obj]],
         snap: Snapshot) -> RunStatus:
    runtime = wanted.runtime
    if wanted.retired:
        out = RunStatus(run, RETIRED)
        if job is not None:
            out.why.append(f"its {runtime.kind} is still in the cluster: Argo CD has not "
                           "pruned it yet")
        return out
    if job is None:
        return RunStatus(run, NOT_SYNCED)
    out = RunStatus(run, STARTING, started=str(job["metadata"].get("creationTimestamp", "")))
    waits, ended = _pods(wanted, pods, out)
    out.why = waits
    true = {c.get("type"): c for c in lookup(job, "status", "conditions") or []
            if c.get("status") == "True"}
    workload = _workload(job, snap, wanted.namespace)
    suspended = lookup(job, *runtime.suspend_keys) is True
    if runtime.succeeded_condition in true:
        out.phase = SUCCEEDED
    elif runtime.failed_condition in true:
        out.phase, out.failing = FAILED, True
        out.why = [_one_line(true[runtime.failed_condition].get("message")), *ended[:1]]
    elif suspended and wanted.queue:
        out.phase = QUEUED
        out.why = _queue_words(workload, wanted, snap, out)
    elif suspended:
        out.phase = SUSPENDED
        out.why = ["suspended in Git (spec.runPolicy.suspend): a commit resumes it"]
    elif pods and all(_ready(pod) or _done(pod) for _, _, pod in pods):
        out.phase = RUNNING
    elif not pods and workload is not None:
        out.phase = ADMITTED
    out.why += _drift(wanted, job)
    return out


def _pods(wanted: Wanted, pods: list[tuple[str, int, Obj]], out: RunStatus
          ) -> tuple[list[str], list[str]]:
    """Count the run's pods into `out`; (why pods wait, how pods ended badly), in words."""
    for role, count in wanted.replicas.items():
        mine = [pod for r, _, pod in pods if r == role]
        out.pods[role] = (sum(_ready(pod) or _done(pod) for pod in mine), count)
    waits: list[str] = []
    ended: list[str] = []
    order = {role: i for i, role in enumerate(naming.ROLES)}
    for role, index, pod in sorted(pods, key=lambda p: (order.get(p[0], 99), p[1])):
        statuses = lookup(pod, "status", "containerStatuses") or []
        out.restarts += sum(int(s.get("restartCount", 0)) for s in statuses)
        phase = lookup(pod, "status", "phase")
        if lookup(pod, "spec", "nodeName") and phase in ("Pending", "Running"):
            out.gpus += _gpus(pod)
        shown = naming.pod_name(out.name, role, index)
        waits += _waits(shown, pod)
        ended += _ended(shown, statuses)
    return waits, ended


def _waits(shown: str, pod: Obj) -> list[str]:
    """Why a pod does not run: the scheduler's reason, or a container that cannot start."""
    for condition in lookup(pod, "status", "conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return [f"{shown} cannot be scheduled: {_one_line(condition.get('message'))}"]
    for state in lookup(pod, "status", "containerStatuses") or []:
        waiting = lookup(state, "state", "waiting") or {}
        if waiting.get("reason") in STUCK_WAITING:
            return [f"{shown}: {waiting['reason']}: {_one_line(waiting.get('message'))}"]
    return []


def _ended(shown: str, statuses: list[Obj]) -> list[str]:
    """A container that ended with a non-zero exit code (now, or before its restart)."""
    for state in statuses:
        ended = lookup(state, "state", "terminated") or lookup(state, "lastState", "terminated")
        if ended and ended.get("exitCode"):
            reason = ended.get("reason")
            said = f" ({reason})" if reason and reason != "Error" else ""
            return [f"{shown} exited with code {ended['exitCode']}{said}"]
    return []


def _queue_words(workload: Obj | None, wanted: Wanted, snap: Snapshot,
                 out: RunStatus) -> list[str]:
    """Why Kueue has not admitted the run, in Kueue's own words, and how many wait with it."""
    if workload is None:
        return [f"waiting for Kueue to create its Workload (LocalQueue {wanted.queue}): is "
                "Kueue running, with this runtime's integration on?"]
    conditions = {c.get("type"): c for c in lookup(workload, "status", "conditions") or []}
    words = []
    for kind in ("Evicted", "Preempted"):
        if (conditions.get(kind) or {}).get("status") == "True":
            words.append(f"{kind.lower()} by Kueue: {_one_line(conditions[kind].get('message'))}")
    reserved = conditions.get("QuotaReserved") or {}
    if reserved.get("status") == "False":
        reason = reserved.get("reason", "")
        if reason == "Inadmissible":
            out.failing = True
        words.append(f"Kueue: {_one_line(reserved.get('message'))}")
    queue = snap.named(LOCAL_QUEUES, wanted.namespace, wanted.queue)
    if queue is None and LOCAL_QUEUES not in snap.not_served:
        out.failing = True
        words.append(f"LocalQueue {wanted.queue} does not exist in {wanted.namespace}")
    elif queue is not None:
        pending = int(lookup(queue, "status", "pendingWorkloads") or 0)
        words.append(f"{pending} pending in LocalQueue {wanted.queue}")
    return words


def _workload(job: Obj, snap: Snapshot, namespace: str) -> Obj | None:
    owned = snap.index(WORKLOADS, namespace, _owners).get(str(job["metadata"].get("uid")))
    return owned[0] if owned else None


def _claim(wanted: Wanted, snap: Snapshot) -> list[str]:
    claim = snap.named(CLAIMS, wanted.namespace, wanted.claim)
    if claim is None or lookup(claim, "status", "phase") == "Bound":
        return []
    return [f"claim {wanted.claim} is {lookup(claim, 'status', 'phase') or 'not bound'}: its "
            "pods wait until a volume is bound"]


def _drift(wanted: Wanted, job: Obj) -> list[str]:
    """Where the job in the cluster has other roles or replicas than the spec renders."""
    live = lookup(wanted.runtime.as_tfjob(job), "spec", "tfReplicaSpecs") or {}
    types = {naming.REPLICA_TYPES.get(role, role): role for role in wanted.replicas}
    out = []
    for replica_type, spec in live.items():
        role = types.get(replica_type, replica_type.lower())
        count, asked = int(spec.get("replicas") or 1), wanted.replicas.get(role)
        if asked is None:
            out.append(f"the cluster's {wanted.runtime.kind} has a {role} role the spec does "
                       "not (changed by hand?)")
        elif count != asked:
            out.append(f"{role}: {count} replicas in the cluster, {asked} in the spec "
                       "(changed by hand?)")
    return out


def _foreign_jobs(wanted: Wanted, snap: Snapshot) -> list[str]:
    """Jobs labelled as this experiment's that no run of its spec renders (another runtime's
    kind included: a job edited or created by hand)."""
    out = []
    for runtime in runtimes.RUNTIMES:
        for job in snap.index(job_api(runtime), wanted.namespace, _instance).get(wanted.name, ()):
            meta = job["metadata"]
            if runtime is not wanted.runtime or meta["name"] not in wanted.runs:
                out.append(f"the cluster holds {runtime.kind} {meta['name']}, which this spec "
                           "does not render")
    return out


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in lookup(pod, "status", "conditions") or [])


def _done(pod: Obj) -> bool:
    return lookup(pod, "status", "phase") == "Succeeded"


def _gpus(pod: Obj) -> int:
    total = 0
    for container in lookup(pod, "spec", "containers") or []:
        value = str(lookup(container, "resources", "limits", GPU) or "0")
        total += int(value) if value.isdigit() else 0
    return total


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def age(timestamp: str, now: datetime | None = None) -> str:
    """`42s`, `5m`, `3h`, `2d` since an API timestamp; "-" without one."""
    if not timestamp:
        return "-"
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    seconds = int(((now or datetime.now(timezone.utc)) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"
