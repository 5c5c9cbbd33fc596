"""What one process can be given: Linux refuses to start a program given any single argument
or environment string longer than MAX_ARG_STRLEN (`repo/runtimes/base.py`), and the container
then never starts ("Argument list too long"), though the API server stored the pod.

Each command and args string and each env value (as `NAME=value`) of the spec and of its
roles is measured where it is written, every run of a sweep with its values put in; and
TF_CONFIG, which lists every task's address in every pod, is measured as the runtime gives it
(the operator for a TFJob, the chart for a JobSet: the same string), for the longest run's
name, the namespace and tfgen.yaml's clusterDomain. Each refusal says the figure, the limit and
what would fit. Values a pod reads from a Secret or ConfigMap are not known here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ...problems import Problem
from ...repo import naming
from ...repo.runtimes import tfconfig, tfconfig_size
from ...repo.runtimes.base import (
    MAX_ARG_STRLEN,
    PORT,
    TF_CONFIG_ENV,
    TOO_LONG_HINT,
    env_bytes,
    exec_bytes,
    too_long_message,
)
from ..experiment import sweep
from ..experiment.checked import Checked, Collector, lookup, roles
from ..yaml.document import PointerParts


def process_problems(checked: Checked, cluster_domain: str, *, each_run: bool) -> list[Problem]:
    """Every string of the spec a process is given, and every pod's TF_CONFIG, within
    MAX_ARG_STRLEN. Asked of a spec the schema accepts; `each_run`: a sweep's runs are built
    (not when its values file is too large to write, which says so already)."""
    data, spec = checked.data, checked.data["spec"]
    name = str(lookup(data, "metadata", "name"))
    try:
        every = sweep.runs(spec) if each_run else [sweep.Run(0, "")]
    except (TypeError, ValueError, KeyError, AttributeError):
        every = [sweep.Run(0, "")]  # a sweep too broken to expand: its own problems say why
    largest: dict[PointerParts, tuple[int, str]] = {}
    swept_fields = {parts for parts, text in sweep.placeholder_fields(spec)
                    if sweep.PLACEHOLDER.search(text)} if sweep.has_sweep(spec) else set()
    for run in every:
        own = sweep.run_spec(spec, name, run) if sweep.has_sweep(spec) and each_run else spec
        for parts, what, size in _strings(own):
            if own is spec and parts in swept_fields:
                continue  # as written, not as any run gets it: the runs were not built
            if size > largest.get(parts, (0, ""))[0]:
                largest[parts] = (size, what)
    out = Collector(checked.locator)
    for parts, (size, what) in largest.items():
        if size > MAX_ARG_STRLEN:
            swept = ", with the sweep's values put in," if sweep.has_sweep(spec) else ""
            out.add(parts, too_long_message(what + swept, size), TOO_LONG_HINT, key=False)
    # a sweep of no runs has its own problem; its name is still measured
    _tf_config(data, spec, [naming.job_name(name, run.suffix) for run in every] or [name],
               cluster_domain, out)
    return out.problems


def _strings(spec: dict[str, Any]) -> Iterator[tuple[PointerParts, str, int]]:
    """(where, what, execve bytes) of each command, args and env string of the spec and its
    roles."""
    scopes: list[tuple[PointerParts, dict[str, Any]]] = [(("spec",), spec)]
    scopes += [(("spec", "roles", role), body) for role, body in roles(spec)]
    for base, scope in scopes:
        for field in ("command", "args"):
            for index, text in enumerate(scope.get(field) or []):
                if isinstance(text, str):
                    yield (*base, field, index), f"this {field} string", exec_bytes(text)
        for index, entry in enumerate(scope.get("env") or []):
            if isinstance(entry, dict) and isinstance(entry.get("value"), str):
                yield ((*base, "env", index, "value"), f"env {entry.get('name')}={{value}}",
                       env_bytes(str(entry.get("name")), entry["value"]))


def _tf_config(data: dict[str, Any], spec: dict[str, Any], jobs: list[str],
               cluster_domain: str, out: Collector) -> None:
    """The longest TF_CONFIG of the longest run, refused at the largest role's replicas with
    the count of them that would fit."""
    counts = {role: body["replicas"] for role, body in roles(spec)
              if isinstance(body.get("replicas"), int)}
    if sum(counts.values()) <= 1:
        return  # one task: the runtime sets no TF_CONFIG
    job, namespace = max(jobs, key=len), str(lookup(data, "metadata", "namespace"))
    # Most jobs are far from the limit: every address, quoted, no longer than the longest
    # possible one, plus the keys and the task, is a bound that needs no JSON built.
    longest = len(tfconfig.service_address(job, namespace, "Evaluator", naming.MAX_REPLICAS,
                                           PORT, cluster_domain))
    if sum(counts.values()) * (longest + 3) + 256 < MAX_ARG_STRLEN:
        return

    def size(of: dict[str, int]) -> tuple[str, int, int]:
        replicas = {naming.REPLICA_TYPES[role]: n for role, n in of.items()}
        return tfconfig_size.longest_tf_config(
            tfconfig_size.addresses(job, namespace, replicas, cluster_domain))

    task_type, index, bytes_ = size(counts)
    if bytes_ <= MAX_ARG_STRLEN:
        return
    role = max(sorted(counts, key=naming.ROLES.index), key=lambda r: counts[r])  # worker, not ps
    fit = _most_that_fit(lambda n: size({**counts, role: n})[2] <= MAX_ARG_STRLEN,
                         counts[role])
    where = f" (its {len(jobs)} runs' longest name {job})" if len(jobs) > 1 else ""
    out.add(("spec", "roles", role, "replicas"),
            f"every pod's TF_CONFIG lists all {sum(counts.values()):,} task addresses "
            f"(<pod>.{namespace}.svc{'.' + cluster_domain if cluster_domain else ''}:"
            f"{PORT}){where}: "
            + too_long_message(f"{task_type} {index}'s {TF_CONFIG_ENV}={{value}}", bytes_),
            f"at most {fit:,} {role} replicas fit with the other roles as they are; or a "
            "shorter experiment name or namespace" if fit else
            "the other roles alone are too many; fewer replicas, or a shorter experiment "
            "name or namespace", key=False)


def _most_that_fit(fits: Callable[[int], bool], upper: int) -> int:
    """The largest n in [0, upper) for which `fits(n)` holds (it holds for every smaller n);
    0 when none does."""
    low, high = 0, upper  # fits(high) is false
    if not fits(0):
        return 0
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
