"""The pods of an imported TFJob -> the spec's roles, and what every role shares.

Each replica group's pod template becomes a role (image, command, args, env, resources and
GPUs, node selectors, tolerations, restart policy); a field every role sets alike is lifted
to the spec itself. Every field used is marked on its manifest (`leftout.leftovers` lists the
rest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..repo.runtimes import CONTAINER, PORT, PORT_NAME
from .jobs import Job, Replica
from .manifests import Manifest, ManifestError, Path_, pointer

# PodTemplate-level fields the spec sets once for every role (spec field <- pod or container path).
SHARED_POD_FIELDS = {
    "imagePullSecrets": ("imagePullSecrets",),
    "serviceAccountName": ("serviceAccountName",),
    "schedulerName": ("schedulerName",),
    "priorityClassName": ("priorityClassName",),
    "securityContext": ("securityContext",),
}
SECURITY_FIELDS = ("runAsUser", "runAsGroup", "fsGroup", "supplementalGroups")
SHARED_CONTAINER_FIELDS = ("imagePullPolicy", "workingDir")


@dataclass
class PodTemplate:
    """One replica group's pod template: the job, the paths of its pod spec and container."""

    job: Manifest
    replica: Replica
    spec: Path_
    container: Path_ | None

    def get(self, *parts: str | int) -> Any:
        return self.job.get(*self.spec, *parts)

    def take(self, *parts: str | int) -> Any:
        return self.job.take(*self.spec, *parts)

    def cget(self, *parts: str | int) -> Any:
        return self.job.get(*self.container, *parts) if self.container else None

    def ctake(self, *parts: str | int) -> Any:
        return self.job.take(*self.container, *parts) if self.container else None

    def clist(self, *parts: str | int) -> list[Any]:
        return self.job.sequence(*self.container, *parts) if self.container else []

    def cmap(self, *parts: str | int) -> dict[str, Any]:
        return self.job.mapping(*self.container, *parts) if self.container else {}


def _pod(job: Manifest, replica: Replica) -> PodTemplate:
    spec = (*replica.template, "spec")
    containers = job.get(*spec, "containers")
    where = f"{job.where}: {job.ref} {pointer(spec)}.containers"
    if not isinstance(containers, list) or not containers:
        raise ManifestError(f"{where}: no containers")
    names = [c.get("name") if isinstance(c, dict) else None for c in containers]
    if CONTAINER in names:
        index = names.index(CONTAINER)
    elif len(containers) == 1:
        index = 0  # the chart names it tensorflow, the name the operator looks for
    else:
        raise ManifestError(f"{where}: none of the containers is named {CONTAINER!r}, "
                            "the one the operator runs TensorFlow in")
    container = (*spec, "containers", index)
    job.take(*container, "name")
    if job.get(*container, "ports") == [{"name": PORT_NAME, "containerPort": PORT}]:
        job.take(*container, "ports")
    return PodTemplate(job, replica, spec, container)


def _env(pod: PodTemplate, notes: list[str]) -> list[dict[str, Any]]:
    """The container's variables the spec can carry: a value, a Secret key or a ConfigMap key
    (the others noted); TF_CONFIG and what the runtime set aside stay left over."""
    out = []
    aside = {parts[-1] for parts in pod.job.why if parts[:-1] == (*(pod.container or ()), "env")}
    for index, entry in enumerate(pod.clist("env")):
        if index in aside or not _importable(entry):
            continue  # left over with its reason; TF_CONFIG is the runtime's
        variable = _variable(pod, index, entry)
        if variable is not None:
            out.append(variable)
        else:
            notes.append(f"{pod.job.ref}: variable {entry.get('name')} of "
                         f"{pod.replica.written} is not imported (the spec takes a value, a "
                         "Secret key or a ConfigMap key)")
    return out


def _importable(entry: Any) -> bool:
    """A named variable that is not TF_CONFIG (the runtime's own)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        return False
    return entry["name"] != "TF_CONFIG"


def _variable(pod: PodTemplate, index: int, entry: dict[str, Any]) -> dict[str, Any] | None:
    """The spec's form of env entry `index` (taken), None when the spec has no form for it."""
    value_from = entry.get("valueFrom")
    if "value" in entry or not value_from:
        pod.ctake("env", index)
        return {"name": entry["name"], "value": str(entry.get("value", ""))}
    if not isinstance(value_from, dict) or len(value_from) != 1:
        return None
    for ref in ("secretKeyRef", "configMapKeyRef"):
        source = value_from.get(ref)
        if isinstance(source, dict):
            pod.ctake("env", index, "name")
            pod.ctake("env", index, "valueFrom", ref, "name")
            pod.ctake("env", index, "valueFrom", ref, "key")
            return {"name": entry["name"], ref: {"name": source.get("name"),
                                                 "key": source.get("key")}}
    return None


def _resources(pod: PodTemplate, role: dict[str, Any], notes: list[str]) -> None:
    pod.cmap("resources")
    requests = pod.cmap("resources", "requests")
    limits = pod.cmap("resources", "limits")
    if "cpu" in requests:
        role["cpu"] = str(pod.ctake("resources", "requests", "cpu"))
    elif "cpu" in limits:  # Kubernetes requests what a container limits when it says no more
        role["cpu"] = str(limits["cpu"])
    _memory(pod, role, notes, requests.get("memory"), limits.get("memory"))
    _gpus(pod, role, requests, limits)


def _memory(pod: PodTemplate, role: dict[str, Any], notes: list[str], request: Any,
            limit: Any) -> None:
    """The spec's memory is request and limit: the limit, else the request (noted)."""
    if limit is not None:
        role["memory"] = str(pod.ctake("resources", "limits", "memory"))
        if request is not None and str(request) == str(limit):
            pod.ctake("resources", "requests", "memory")
    elif request is not None:
        role["memory"] = str(pod.ctake("resources", "requests", "memory"))
        notes.append(f"{pod.job.ref} {pod.replica.written}: memory {request} becomes the limit "
                     "too (the spec's memory is request and limit)")


def _gpus(pod: PodTemplate, role: dict[str, Any], requests: dict[str, Any],
          limits: dict[str, Any]) -> None:
    """The first extended resource named like a GPU (`vendor/...gpu...`) and its count."""
    gpus = [key for key in limits if "gpu" in str(key).lower() and "/" in str(key)]
    if not gpus:
        return
    key = gpus[0]
    count = pod.ctake("resources", "limits", key)
    role["gpus"] = int(count) if str(count).isdigit() else count
    role["gpuResource"] = key
    if key in requests and str(requests[key]) == str(count):
        pod.ctake("resources", "requests", key)


def _role(pod: PodTemplate, notes: list[str]) -> dict[str, Any]:
    replica = pod.replica
    role: dict[str, Any] = {}
    if replica.replicas is not None:
        role["replicas"] = replica.replicas
    image = pod.ctake("image") or replica.default_image
    if image:
        role["image"] = image
    for key in ("command", "args"):
        value = pod.ctake(key)
        if value is not None:
            role[key] = _words(value)
    role["env"] = _env(pod, notes)
    _resources(pod, role, notes)
    for key in ("nodeSelector", "tolerations"):
        value = pod.take(key)
        if value:
            role[key] = value
    if replica.restart_policy is not None:
        role["restartPolicy"] = replica.restart_policy
    return role


def _words(value: Any) -> Any:
    """A command or its args as the spec writes them: each item text."""
    return [str(item) for item in value] if isinstance(value, list) else value


def _shared(pods: list[PodTemplate], spec: dict[str, Any], key: str, read: Any) -> None:
    """A field the spec sets for every role: taken when all pods agree (or say nothing)."""
    values = [read(pod, False) for pod in pods]
    given = [v for v in values if v not in (None, "", [], {})]
    if not given:
        return
    if len(given) < len(values) or any(v != given[0] for v in given):
        _differ(pods, key, values)
        return
    for pod in pods:
        read(pod, True)
    spec[key] = given[0]


def _differ(pods: list[PodTemplate], key: str, values: list[Any]) -> None:
    """The field left over on every pod, each pod's value listed."""
    shown = ", ".join(f"{pod.replica.written}: {value!r}" for pod, value in zip(
        pods, values, strict=True))
    for pod in pods:
        where = pod.container if key in SHARED_CONTAINER_FIELDS else pod.spec
        if where is not None:
            field_path = (*where, SHARED_POD_FIELDS.get(key, (key,))[0])
            pod.job.why[field_path] = (
                f"the spec sets {key} once for every role, and the groups differ ({shown})")


def _security(pod: PodTemplate, take: bool) -> Any:
    context = pod.get("securityContext")
    if not isinstance(context, dict):
        return context
    known = {k: v for k, v in context.items() if k in SECURITY_FIELDS}
    if take:
        for k in known:
            pod.take("securityContext", k)
    return known


def _pull_secrets(pod: PodTemplate, take: bool) -> Any:
    secrets = pod.get("imagePullSecrets")
    if not isinstance(secrets, list):
        return secrets
    if take:
        for index in range(len(secrets)):
            pod.take("imagePullSecrets", index, "name")
    return [s.get("name") if isinstance(s, dict) else s for s in secrets]


def _readers() -> dict[str, Any]:
    readers: dict[str, Any] = {
        "imagePullSecrets": _pull_secrets,
        "securityContext": _security,
    }
    for key, (pod_key,) in SHARED_POD_FIELDS.items():
        readers.setdefault(key, lambda pod, take, k=pod_key: (pod.take if take else pod.get)(k))
    for key in SHARED_CONTAINER_FIELDS:
        readers[key] = lambda pod, take, k=key: (pod.ctake if take else pod.cget)(k)
    return readers


def _lift(roles: dict[str, dict[str, Any]], spec: dict[str, Any], key: str) -> None:
    """Move a per-role value the roles share up to the spec (how people write specs)."""
    values = [role.get(key) for role in roles.values()]
    if values[0] is not None and all(v == values[0] for v in values):
        spec[key] = values[0]
        for role in roles.values():
            role.pop(key, None)


def roles_of(job: Job, notes: list[str]) -> tuple[list[PodTemplate], dict[str, dict[str, Any]]]:
    """(each replica group's pod, the role it becomes by role name); `notes` gets what
    changes meaning."""
    pods = [_pod(job.manifest, replica) for replica in job.replicas]
    return pods, {pod.replica.role: _role(pod, notes) for pod in pods}


def shared_fields(pods: list[PodTemplate], roles: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The spec's own fields: what every role sets alike, lifted out of the roles."""
    spec: dict[str, Any] = {}
    for key in ("image", "command", "args", "env"):
        _lift(roles, spec, key)
    for owner in (spec, *roles.values()):
        if owner.get("env") == []:
            owner.pop("env")
    readers = _readers()
    for key in (*SHARED_CONTAINER_FIELDS, *SHARED_POD_FIELDS):
        _shared(pods, spec, key, readers[key])
    return spec
