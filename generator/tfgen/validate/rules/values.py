"""Experiment spec -> Helm values of charts/tfjob-experiment.

The chart knows nothing about the spec: it only reads the values shape agreed in the contract.
This module is the one translation between the two. It takes a validated experiment, whose
schema defaults are applied already (the schema is their only home), and returns a complete,
explicit values dict: every key the chart reads is present, so a values file alone says
exactly what will run, and a reviewer never has to know the chart's defaults. An optional spec
field that is absent becomes the chart's "not set" (an empty string, list or map, or null).
The result is built in a fixed key order and user maps are sorted, so the same spec always
gives the same bytes once dumped.

It lives in the validate stage, below render, so that `valuesfile` measures the very file
render will write (`repo_values`, what render calls) before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...repo import naming
from ..config.load import RepoConfig, builtin_data
from ..experiment import sweep
from ..schema.defaults import object_defaults

__all__ = ["build_values", "env_list", "env_var", "repo_values", "resources", "run_values"]


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


def env_list(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Spec env list -> Kubernetes EnvVar list, order kept (later entries may use earlier ones)."""
    return [env_var(entry) for entry in entries]


def run_values(spec: dict[str, Any], name: str, logs: str, run: sweep.Run) -> dict[str, Any]:
    """One run of a sweep as the chart ranges over it: every placeholder replaced here, so Helm
    only ever sees literal text. `logs` is the TensorBoard log directory the values give."""
    own = sweep.run_spec(spec, name, run)
    return {
        "name": naming.job_name(name, run.suffix),
        "suffix": run.suffix,
        "logDir": sweep.run_log_dir(logs, run),
        "args": list(own["args"]),
        "env": env_list(own["env"]),
        # only the roles with args or env of their own; the others take the run's
        "roles": {
            role: {"args": list(own["roles"][role].get("args", [])),
                   "env": env_list(own["roles"][role]["env"])}
            for role in naming.ROLES
            if own["roles"].get(role, {}).get("args") or own["roles"].get(role, {}).get("env")
        },
    }


def tensorboard_log_dir(tensorboard: Mapping[str, Any], mount_path: str) -> str:
    """The log directory the values give TensorBoard, under which each run has its own. A
    disabled TensorBoard may have no logDir; the chart still wants an absolute path, so it gets
    the conventional one (unused while disabled) rather than an invalid ""."""
    return tensorboard.get("logDir") or f"{mount_path.rstrip('/')}/logs"


def _sorted_map(value: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value[key] for key in sorted(value)}


def resources(
    cpu: str | int | float | None, memory: str | None, gpus: int = 0, gpu_resource: str = ""
) -> dict[str, dict[str, Any]]:
    """Requests cpu+memory; limits memory (no CPU limit: throttling slows training) and GPUs.

    GPUs are extended resources: Kubernetes requires request == limit and fills the request
    from the limit, so only the limit is written. Every quantity is a string, as the API
    server returns it: Argo CD compares a JobSet's replicatedJobs whole, and a GPU count
    written as the number 1 would differ for ever from the "1" the cluster holds.
    """
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = str(cpu)
    if memory is not None:
        requests["memory"] = str(memory)
        limits["memory"] = str(memory)
    if gpus > 0:
        limits[gpu_resource] = str(gpus)
    return {"requests": requests, "limits": limits}


def _role(role: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "replicas": role["replicas"],
        "image": role.get("image", ""),
        "command": list(role.get("command", [])),
        "args": list(role.get("args", [])),
        "env": env_list(role["env"]),
        "resources": resources(
            role.get("cpu"), role.get("memory"), role["gpus"], role["gpuResource"]
        ),
        "nodeSelector": _sorted_map(role["nodeSelector"]),
        "tolerations": [_sorted_map(t) for t in role["tolerations"]],
        "restartPolicy": role["restartPolicy"],
    }


def _storage(storage: Mapping[str, Any]) -> dict[str, Any]:
    # With an existing claim no volume is created; the chart still reads a complete `nas`
    # block, so it gets the one an empty `nas` would have.
    nas = storage.get("nas") or object_defaults("spec", "storage", "nas")
    return {
        "existingClaim": storage.get("existingClaim", ""),
        "mountPath": storage["mountPath"],
        "nas": {
            "driver": nas["driver"],
            "server": nas.get("server", ""),
            "path": nas["path"],
            "vers": str(nas["vers"]),
            "options": nas["options"],
            "mountOptions": list(nas["mountOptions"]),
            "mode": str(nas.get("mode", "")),
            "capacity": nas["capacity"],
            "storageClassName": nas["storageClassName"],
        },
    }


def _tensorboard_resources(cpu: str | int | float, memory: str) -> dict[str, dict[str, Any]]:
    """TensorBoard's CPU is capped at its request, unlike training's: a busy board must not
    take CPU from the trainers on its node."""
    out = resources(cpu, memory)
    out["limits"] = {"cpu": str(cpu), **out["limits"]}
    return out


def _pod_security(context: Mapping[str, Any], run_as_non_root: bool) -> dict[str, Any]:
    """The spec's securityContext as the pod's: runAsNonRoot when the spec or the namespace's
    policy asks, seccomp as a profile object."""
    out = {key: context[key] for key in sorted(context) if key != "seccompProfile"}
    if run_as_non_root:
        out["runAsNonRoot"] = True
    out["seccompProfile"] = {"type": context["seccompProfile"]}
    return dict(sorted(out.items()))


def _tensorboard(tb: Mapping[str, Any], mount_path: str) -> dict[str, Any]:
    service, ingress = tb["service"], tb["ingress"]
    return {
        "enabled": tb["enabled"],
        "keep": tb["keep"],
        "image": tb["image"],
        "logDir": tensorboard_log_dir(tb, mount_path),
        "reloadInterval": tb["reloadInterval"],
        "resources": _tensorboard_resources(tb["cpu"], tb["memory"]),
        "service": {"type": service["type"], "port": service["port"]},
        "ingress": {
            "enabled": ingress["enabled"],
            "className": ingress["className"],
            "host": ingress["host"],
            "pathPrefix": ingress["pathPrefix"],
            "tlsSecretName": ingress["tlsSecretName"],
        },
    }


def _run_policy(policy: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "cleanPodPolicy": policy["cleanPodPolicy"],
        "activeDeadlineSeconds": policy.get("activeDeadlineSeconds"),
        "backoffLimit": policy.get("backoffLimit"),
        "successPolicy": policy.get("successPolicy", ""),
        "suspend": policy["suspend"],
        "schedulingPolicy": _sorted_map(policy["schedulingPolicy"]),
    }


def _network_policy(block: Mapping[str, Any] | None) -> dict[str, Any]:
    block = block if block is not None else builtin_data()["networkPolicy"]
    return {"enabled": bool(block["enabled"]), "ingressNamespace": block["ingressNamespace"]}


def _runs(name: str, spec: Mapping[str, Any], logs: str) -> list[dict[str, Any]]:
    """A sweep's runs as the chart ranges over them."""
    return [run_values(dict(spec), name, logs, run) for run in sweep.runs(dict(spec))]


# The key of a sweep's runs in the values: `valuesfile` measures them one by one instead of
# building them all (a hostile grid would not fit in memory).
RUNS_KEY = "runs"


def repo_values(experiment: Mapping[str, Any], config: RepoConfig | None, *,
                runs: bool = True) -> dict[str, Any]:
    """The values render writes for a validated experiment in this repository: tfgen.yaml's
    choices the values carry (`networkPolicy`, the namespace's `runAsNonRoot`,
    `clusterDomain`); without `config`, tfgen.yaml's defaults. `runs=False`: without a sweep's
    runs."""
    if config is None:
        return build_values(experiment, runs=runs)
    namespace = str(experiment["metadata"]["namespace"])
    return build_values(experiment, config.network_policy,
                        config.namespace_policy(namespace)["runAsNonRoot"],
                        config.cluster_domain, runs=runs)


def build_values(
    experiment: Mapping[str, Any],
    network_policy: Mapping[str, Any] | None = None,
    run_as_non_root: bool = False,
    cluster_domain: str = "",
    *,
    runs: bool = True,
) -> dict[str, Any]:
    """A validated experiment document (apiVersion/kind/metadata/spec) -> chart values.

    `network_policy` is tfgen.yaml's `networkPolicy` block (a repository's choice, not the
    spec's: whoever writes a spec must not be able to open the job's ports); None means the
    schema's defaults. `run_as_non_root` is the namespace's policy in tfgen.yaml asking for
    non-root training pods. `cluster_domain` is tfgen.yaml's `clusterDomain`, the DNS domain
    the runtime jobset's TF_CONFIG addresses end in. `runs=False` leaves a sweep's runs out.
    """
    metadata, spec = experiment["metadata"], experiment["spec"]
    roles = spec["roles"]
    tensorboard = _tensorboard(spec["tensorboard"], spec["storage"]["mountPath"])
    return {
        "experiment": {
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "owner": metadata["owner"],
            "labels": _sorted_map(metadata["labels"]),
            "annotations": _sorted_map({k: v for k, v in metadata["annotations"].items()
                                        if k not in naming.SOURCE_ANNOTATIONS}),
            "rerunOf": metadata["annotations"].get(naming.RERUN_ANNOTATION, ""),
        },
        "lifecycle": spec["lifecycle"],
        "runtime": spec["runtime"],
        "kueue": {"queue": spec["queue"], "priority": spec["priority"]},
        "clusterDomain": cluster_domain,
        "image": spec.get("image", ""),
        "imagePullPolicy": spec["imagePullPolicy"],
        "imagePullSecrets": list(spec["imagePullSecrets"]),
        "command": list(spec["command"]),
        "args": list(spec["args"]),
        "workingDir": spec["workingDir"],
        "env": env_list(spec["env"]),
        "roles": {name: _role(roles[name]) for name in naming.ROLES if name in roles},
        # Only a sweep has runs: a spec without one keeps the values (and objects) it had.
        **({RUNS_KEY: _runs(metadata["name"], spec, tensorboard["logDir"])}
           if runs and sweep.has_sweep(spec) else {}),
        "storage": _storage(spec["storage"]),
        "tensorboard": tensorboard,
        "runPolicy": _run_policy(spec["runPolicy"]),
        "priorityClassName": spec["priorityClassName"],
        "schedulerName": spec["schedulerName"],
        "serviceAccountName": spec["serviceAccountName"],
        "podSecurityContext": _pod_security(spec["securityContext"], run_as_non_root),
        "istioSidecar": spec["istioSidecar"],
        "networkPolicy": _network_policy(network_policy),
    }
