"""Experiment spec -> Helm values of charts/tfjob-experiment.

The chart knows nothing about the spec: it only reads the values shape agreed in the contract.
This module is the one translation between the two. It takes a validated spec (defaults
already applied by the loader) and returns a complete, explicit values dict: every key the
chart reads is present, so a values file alone says exactly what will run, and a reviewer
never has to know the chart's defaults. The result is built in a fixed key order and user
maps are sorted, so the same spec always gives the same bytes once dumped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Role keys of the spec, in the order the chart and people read them.
ROLE_ORDER = ("chief", "master", "worker", "ps", "evaluator")

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_TENSORBOARD_IMAGE = "tensorflow/tensorflow:2.16.1"


def _sorted_map(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: value[key] for key in sorted(value)} if value else {}


def _list(value: Sequence[Any] | None) -> list[Any]:
    return list(value) if value else []


def env_var(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One spec env entry -> a Kubernetes EnvVar (`value` or `valueFrom.<kind>KeyRef`)."""
    out: dict[str, Any] = {"name": entry["name"]}
    if "value" in entry:
        out["value"] = str(entry["value"])
        return out
    for ref in ("secretKeyRef", "configMapKeyRef"):
        if ref in entry:
            source = entry[ref]
            selector: dict[str, Any] = {"name": source["name"], "key": source["key"]}
            if "optional" in source:
                selector["optional"] = bool(source["optional"])
            out["valueFrom"] = {ref: selector}
            return out
    # The schema requires exactly one source; an entry without any is an empty value, which
    # is what Kubernetes does with a bare `name` too.
    out["value"] = ""
    return out


def env_list(entries: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Spec env list -> Kubernetes EnvVar list, order kept (later entries may use earlier ones)."""
    return [env_var(entry) for entry in entries or ()]


def resources(
    cpu: str | int | float | None,
    memory: str | None,
    gpus: int = 0,
    gpu_resource: str = DEFAULT_GPU_RESOURCE,
) -> dict[str, dict[str, Any]]:
    """Requests cpu+memory; limits memory (no CPU limit: throttling slows training) and GPUs.

    GPUs are extended resources: Kubernetes requires request == limit and fills the request
    from the limit, so only the limit is written.
    """
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if cpu not in (None, ""):
        requests["cpu"] = str(cpu)
    if memory not in (None, ""):
        requests["memory"] = str(memory)
        limits["memory"] = str(memory)
    if gpus and int(gpus) > 0:
        limits[gpu_resource or DEFAULT_GPU_RESOURCE] = int(gpus)
    return {"requests": requests, "limits": limits}


def _role(role: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "replicas": int(role.get("replicas", 1)),
        "image": role.get("image", "") or "",
        "command": _list(role.get("command")),
        "args": _list(role.get("args")),
        "env": env_list(role.get("env")),
        "resources": resources(
            role.get("cpu"),
            role.get("memory"),
            int(role.get("gpus", 0) or 0),
            role.get("gpuResource", DEFAULT_GPU_RESOURCE),
        ),
        "nodeSelector": _sorted_map(role.get("nodeSelector")),
        "tolerations": [_sorted_map(t) for t in role.get("tolerations") or ()],
        "restartPolicy": role.get("restartPolicy", "OnFailure"),
    }


def _storage(storage: Mapping[str, Any]) -> dict[str, Any]:
    nas = storage.get("nas") or {}
    return {
        "existingClaim": storage.get("existingClaim", "") or "",
        "mountPath": storage.get("mountPath", ""),
        "nas": {
            "driver": nas.get("driver", "csi"),
            "server": nas.get("server", ""),
            "path": nas.get("path", "/"),
            "vers": str(nas.get("vers", "3")),
            "options": nas.get("options", "") or "",
            "mountOptions": _list(nas.get("mountOptions")),
            "mode": str(nas.get("mode", "") or ""),
            "capacity": nas.get("capacity", "100Gi"),
            "storageClassName": nas.get("storageClassName", "tfgen-nas"),
        },
    }


def _tensorboard(tb: Mapping[str, Any], mount_path: str) -> dict[str, Any]:
    service = tb.get("service") or {}
    ingress = tb.get("ingress") or {}
    # A disabled TensorBoard may have no logDir; the chart still wants an absolute path, so
    # write the conventional one (unused while disabled) rather than an invalid "".
    log_dir = tb.get("logDir") or f"{mount_path.rstrip('/')}/logs"
    return {
        "enabled": bool(tb.get("enabled", True)),
        "image": tb.get("image", DEFAULT_TENSORBOARD_IMAGE),
        "logDir": log_dir,
        "reloadInterval": int(tb.get("reloadInterval", 30)),
        "resources": resources(tb.get("cpu", "500m"), tb.get("memory", "1Gi")),
        "service": {
            "type": service.get("type", "ClusterIP"),
            "port": int(service.get("port", 6006)),
        },
        "ingress": {
            "enabled": bool(ingress.get("enabled", False)),
            "className": ingress.get("className", "") or "",
            "host": ingress.get("host", "") or "",
            "pathPrefix": ingress.get("pathPrefix", "") or "",
            "tlsSecretName": ingress.get("tlsSecretName", "") or "",
        },
    }


def _run_policy(policy: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "cleanPodPolicy": policy.get("cleanPodPolicy", "Running"),
        "activeDeadlineSeconds": policy.get("activeDeadlineSeconds"),
        "backoffLimit": policy.get("backoffLimit"),
        "suspend": bool(policy.get("suspend", False)),
        "schedulingPolicy": _sorted_map(policy.get("schedulingPolicy")),
    }


def build_values(experiment: Mapping[str, Any]) -> dict[str, Any]:
    """A validated experiment document (apiVersion/kind/metadata/spec) -> chart values."""
    metadata = experiment.get("metadata") or {}
    spec = experiment.get("spec") or {}
    roles = spec.get("roles") or {}
    ordered_roles = [r for r in ROLE_ORDER if r in roles] + sorted(set(roles) - set(ROLE_ORDER))
    return {
        "experiment": {
            "name": metadata["name"],
            "namespace": metadata.get("namespace", "default"),
            "owner": metadata.get("owner", ""),
            "labels": _sorted_map(metadata.get("labels")),
            "annotations": _sorted_map(metadata.get("annotations")),
        },
        "image": spec.get("image", ""),
        "imagePullPolicy": spec.get("imagePullPolicy", "IfNotPresent"),
        "imagePullSecrets": _list(spec.get("imagePullSecrets")),
        "command": _list(spec.get("command")),
        "args": _list(spec.get("args")),
        "workingDir": spec.get("workingDir", "") or "",
        "env": env_list(spec.get("env")),
        "roles": {name: _role(roles[name]) for name in ordered_roles},
        "storage": _storage(spec.get("storage") or {}),
        "tensorboard": _tensorboard(
            spec.get("tensorboard") or {}, (spec.get("storage") or {}).get("mountPath", "")
        ),
        "runPolicy": _run_policy(spec.get("runPolicy") or {}),
        "priorityClassName": spec.get("priorityClassName", "") or "",
        "schedulerName": spec.get("schedulerName", "") or "",
        "serviceAccountName": spec.get("serviceAccountName", "") or "",
        "podSecurityContext": _sorted_map(spec.get("securityContext")),
        "istioSidecar": bool(spec.get("istioSidecar", False)),
    }
