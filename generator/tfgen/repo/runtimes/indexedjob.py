"""What Kubernetes itself does for the pods of an Indexed Job, which a runtime built on Jobs
(a JobSet) relies on to give each pod its task index: the completion index the Job controller
writes on every pod, the random suffix of its pod names, and the kubelet's `$(VAR)` expansion
of a container's env, which turns the index into each pod's TF_CONFIG.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import listed

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
# A Job's podFailurePolicy (what the chart makes of restartPolicy ExitCode) is on by default
# from this minor version (beta; alpha and off in 1.25, where the API server drops the field).
JOB_POD_FAILURE_POLICY_SINCE = (1, 26)


def expand(value: str, declared: Mapping[str, str]) -> str:
    """The kubelet's `$(VAR)` expansion of one env value: a variable declared before it is
    replaced, `$$` is `$`, any other `$(...)` stays as written."""
    out, at = [], 0
    while (start := value.find("$", at)) >= 0:
        out.append(value[at:start])
        end = value.find(")", start)
        if value.startswith("$$", start):
            out.append("$")
            at = start + 2
        elif value.startswith("$(", start) and end > 0 and value[start + 2:end] in declared:
            out.append(declared[value[start + 2:end]])
            at = end + 1
        else:
            out.append("$")
            at = start + 1
    return "".join(out) + value[at:]


def pod_env(container: Mapping[str, Any], index: int) -> dict[str, str]:
    """The env of the pod of completion index `index`, as its container sees it."""
    declared: dict[str, str] = {}
    annotation = f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"
    for entry in listed(container.get("env")):
        if not isinstance(entry, Mapping):
            continue
        if _field_ref(entry) == annotation:
            declared[str(entry.get("name"))] = str(index)
        elif isinstance(entry.get("value"), str):
            declared[str(entry.get("name"))] = expand(entry["value"], declared)
    return declared


def _field_ref(entry: Mapping[str, Any]) -> Any:
    """The fieldPath an env entry reads, None for any other entry."""
    source = entry.get("valueFrom")
    ref = source.get("fieldRef") if isinstance(source, Mapping) else None
    return ref.get("fieldPath") if isinstance(ref, Mapping) else None
