"""The runtime and the queue of one spec: what its runtime cannot run (on its cluster's
Kubernetes version), the names it makes within their budget, and Kueue's rules, each at the
spec's line.

A runtime (`repo/runtimes/`) says what it cannot do for a spec; this module reports it where the
spec says it. The name budget follows the runtime: a JobSet's pods are named
`<run>-<role>-0-<index>-xxxxx`, longer than the training operator's `<run>-<role>-<index>`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...problems import WARNING, Problem
from ...repo import naming, runtimes
from ..config.load import RepoConfig
from ..experiment import sweep
from ..experiment.checked import Checked, Collector, lookup
from ..schema.messages import shown
from .cluster import spec_cluster


def runtime_problems(checked: Checked, config: RepoConfig) -> list[Problem]:
    """Every problem of one spec's runtime and queue."""
    spec = checked.data.get("spec")
    if not isinstance(spec, dict):
        return []
    runtime = runtimes.by_name(spec.get("runtime"))
    out = Collector(checked.locator)
    cluster = spec_cluster(checked, config) or config.clusters[0]
    for refusal in runtime.refusals(spec, cluster.kubernetes_version):
        message = refusal.message
        if cluster.declared:  # the version is the cluster's: say which, and where
            message = message.replace(runtimes.VERSION_SOURCE, f"cluster {cluster.name}'s "
                                      f"kubernetesVersion ({config.where(cluster.pointer())})")
        out.add(refusal.parts, f"on runtime {runtime.name}: {message}", refusal.hint,
                key=False)
    _name_budget(checked.data, spec, runtime, config.max_runs, out)
    _queue(spec, runtime, out)
    return out.problems


def _replicas(spec: dict[str, Any]) -> dict[str, int]:
    roles = spec.get("roles")
    return {name: role["replicas"] for name, role in roles.items()
            if isinstance(role, dict) and isinstance(role.get("replicas"), int)
            } if isinstance(roles, dict) else {}


def _name_budget(data: dict[str, Any], spec: dict[str, Any], runtime: runtimes.Runtime,
                 max_runs: int, out: Collector) -> None:
    """The longest pod name of the longest run must fit a DNS label (`max_runs`: tfgen.yaml's
    sweep.maxRuns; a larger sweep is refused by its count, never expanded)."""
    name = lookup(data, "metadata", "name")
    if not naming.is_experiment_name(name):
        return  # its own rule says why
    try:
        if sweep.run_count(spec) > max_runs:
            return
        suffixes = [run.suffix for run in sweep.runs(spec)] if sweep.has_sweep(spec) else [""]
    except (TypeError, ValueError, KeyError, AttributeError):
        return  # a sweep too broken to expand: its own problems say why
    job = max((naming.job_name(name, suffix) for suffix in suffixes), key=len, default=name)
    pod = job + runtime.longest_pod_suffix(_replicas(spec))
    if len(pod) <= naming.MAX_LABEL:
        return
    where = ("spec", "sweep") if job != name else ("metadata", "name")
    left = naming.MAX_LABEL - (len(pod) - len(name))
    out.add(where, f"on runtime {runtime.name} the longest pod name is {shown(pod)}, "
            f"{len(pod)} characters; Kubernetes allows {naming.MAX_LABEL} (its pods are "
            f"{runtime.pod_names})",
            f"at most {max(left, 0)} characters for this experiment's name with these roles "
            "and runs", key=False)


def _queue(spec: dict[str, Any], runtime: runtimes.Runtime, out: Collector) -> None:
    """Kueue owns a queued job's suspend; a priority means nothing without a queue; a runtime
    whose Kueue integration is off by default is warned about (tfgen cannot see the cluster's
    Kueue configuration: a run it does not admit waits suspended, with no word why)."""
    queue, priority = spec.get("queue"), spec.get("priority")
    if queue and not runtime.kueue_framework_by_default:
        problem = out.locator.problem(
            ("spec", "queue"), f"queue {shown(queue)}: Kueue admits a {runtime.kind} only when "
            f"its configuration lists {runtime.kueue_framework} in integrations.frameworks, "
            "which it does not by default (deprecated since Kueue v0.19); otherwise the run "
            "stays suspended", f"spec.runtime: {runtimes.QUEUED_DEFAULT.name} runs it as "
            f"{runtimes.QUEUED_DEFAULT.described}, which Kueue admits by default; or list "
            f"{runtime.kueue_framework} in the cluster's Kueue configuration", key=False)
        out.problems.append(replace(problem, severity=WARNING))
    if queue and lookup(spec, "runPolicy", "suspend") is True:
        out.add(("spec", "runPolicy", "suspend"), f"a run queued by Kueue ({shown(queue)}) "
                "cannot set suspend: Kueue creates it suspended and starts it on admission, "
                "and Argo CD would fight it over the field",
                "remove runPolicy.suspend (Kueue holds the run until admitted), or leave the "
                "queue with queue: \"\"", key=False)
    if priority and not queue:
        out.add(("spec", "priority"), f"priority {shown(priority)} is a Kueue "
                "WorkloadPriorityClass, and this run has no queue",
                "set spec.queue (a LocalQueue of the namespace), or remove spec.priority",
                key=False)
