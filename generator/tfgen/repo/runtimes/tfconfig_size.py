"""Whether the TF_CONFIG a job's pods receive fits the kernel's limit on one environment
string (MAX_ARG_STRLEN): every pod's lists the whole cluster, so a large enough job cannot
start. Measured on the operator's own TF_CONFIG (`tfconfig`), of a rendered job, or of the
replica counts a spec asks for, before anything is rendered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import InputError
from .base import MAX_ARG_STRLEN, PORT, TF_CONFIG_ENV, JobProblem, env_bytes, too_long_message
from .tfconfig import cluster_spec, is_distributed, service_address, tf_config


def addresses(job: str, namespace: str, replicas: Mapping[str, int],
              cluster_domain: str) -> dict[str, list[str]]:
    """The cluster spec of a job whose roles have these replica counts (replica type -> count),
    every task on the default port: what validate knows of a job before it is rendered."""
    return dict(sorted(
        (rtype.lower(), [service_address(job, namespace, rtype, i, PORT, cluster_domain)
                         for i in range(count)])
        for rtype, count in replicas.items()))


def longest_tf_config(cluster: Mapping[str, Sequence[str]]) -> tuple[str, int, int]:
    """(task type, index, bytes of `TF_CONFIG=<value>` in execve) of the task whose TF_CONFIG
    is the longest (the dense form: every pod's lists the whole cluster): the last index of
    one of the types. ("", 0, 0) for an empty cluster."""
    longest = ("", 0, 0)
    for task_type, listed in cluster.items():
        if listed:
            size = env_bytes(TF_CONFIG_ENV, tf_config(cluster, task_type, len(listed) - 1))
            if size > longest[2]:
                longest = (task_type, len(listed) - 1, size)
    return longest


def tf_config_size_problems(tfjob: Mapping[str, Any], cluster_domain: str,
                            pointer: str) -> list[JobProblem]:
    """The longest TF_CONFIG the operator (or the chart, for a JobSet) gives a pod of the job
    within MAX_ARG_STRLEN, reported at `pointer`."""
    try:
        if not is_distributed(tfjob):
            return []
        cluster = cluster_spec(tfjob, cluster_domain)
    except (InputError, AttributeError, TypeError, ValueError):
        return []  # a shape the operator refuses: the job's other problems say why
    task_type, index, size = longest_tf_config(cluster)
    if size <= MAX_ARG_STRLEN:
        return []
    tasks = sum(len(listed) for listed in cluster.values())
    return [JobProblem(pointer, f"every pod's TF_CONFIG lists all {tasks:,} task addresses: "
                       + too_long_message(f"{task_type} {index}'s {TF_CONFIG_ENV}={{value}}",
                                          size),
                       "fewer replicas, or a shorter experiment name or namespace")]
