"""The spec schema and the chart's values schema agree on every bound of every shared field.

`tfgen validate` judges a spec by schemas/experiment.schema.json; `helm template` (and so Argo
CD) judges the values tfgen writes by charts/tfjob-experiment/values.schema.json, the chart's
own home for its rules. A bound that differs lets a spec pass validate and fail in the gate
with helm's text and no line (the old 1000 vs 999 replicas), or pass both and fail in the
cluster. Each shared field is listed once below with its path in each schema; the test compares
minimum, maximum, minLength, maxLength, pattern (every pattern that applies, the one-line rule
included) and enum, and fails when a constrained chart field is missing from the list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tfgen.repo import naming
from tfgen.validate.schema.validator import inlined_schema

ROOT = Path(__file__).resolve().parents[1]
VALUES_SCHEMA = json.loads(
    (ROOT / "charts" / "tfjob-experiment" / "values.schema.json").read_text()
)
SPEC_SCHEMA = inlined_schema()
KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
            "maxLength")

# spec path (dotted, "[]" for list items, "{}" for map values, "<>" for map keys) -> values path
SHARED = {
    "metadata.name": "experiment.name",
    "metadata.namespace": "experiment.namespace",
    "metadata.owner": "experiment.owner",
    "metadata.labels.<>": "experiment.labels.<>",
    "metadata.labels.{}": "experiment.labels.{}",
    "metadata.annotations.<>": "experiment.annotations.<>",
    "spec.image": "image",
    "spec.imagePullPolicy": "imagePullPolicy",
    "spec.imagePullSecrets.[]": "imagePullSecrets.[]",
    "spec.workingDir": "workingDir",
    "spec.env.[].name": "env.[].name",
    "spec.env.[].secretKeyRef.name": "env.[].valueFrom.secretKeyRef.name",
    "spec.env.[].secretKeyRef.key": "env.[].valueFrom.secretKeyRef.key",
    "spec.env.[].configMapKeyRef.name": "env.[].valueFrom.configMapKeyRef.name",
    "spec.env.[].configMapKeyRef.key": "env.[].valueFrom.configMapKeyRef.key",
    "spec.roles.worker.replicas": "roles.worker.replicas",
    "spec.roles.ps.replicas": "roles.ps.replicas",
    "spec.roles.worker.image": "roles.worker.image",
    "spec.roles.worker.restartPolicy": "roles.worker.restartPolicy",
    "spec.roles.worker.nodeSelector.<>": "roles.worker.nodeSelector.<>",
    "spec.roles.worker.nodeSelector.{}": "roles.worker.nodeSelector.{}",
    "spec.roles.worker.tolerations.[].key": "roles.worker.tolerations.[].key",
    "spec.roles.worker.tolerations.[].operator": "roles.worker.tolerations.[].operator",
    "spec.roles.worker.tolerations.[].value": "roles.worker.tolerations.[].value",
    "spec.roles.worker.tolerations.[].effect": "roles.worker.tolerations.[].effect",
    "spec.roles.worker.tolerations.[].tolerationSeconds":
        "roles.worker.tolerations.[].tolerationSeconds",
    "spec.storage.existingClaim": "storage.existingClaim",
    "spec.storage.mountPath": "storage.mountPath",
    "spec.storage.nas.driver": "storage.nas.driver",
    "spec.storage.nas.server": "storage.nas.server",
    "spec.storage.nas.path": "storage.nas.path",
    "spec.storage.nas.vers": "storage.nas.vers",
    "spec.storage.nas.options": "storage.nas.options",
    "spec.storage.nas.mountOptions.[]": "storage.nas.mountOptions.[]",
    "spec.storage.nas.mode": "storage.nas.mode",
    "spec.storage.nas.capacity": "storage.nas.capacity",
    "spec.storage.nas.storageClassName": "storage.nas.storageClassName",
    "spec.tensorboard.image": "tensorboard.image",
    "spec.tensorboard.logDir": "tensorboard.logDir",
    "spec.tensorboard.reloadInterval": "tensorboard.reloadInterval",
    "spec.tensorboard.service.type": "tensorboard.service.type",
    "spec.tensorboard.service.port": "tensorboard.service.port",
    "spec.tensorboard.ingress.host": "tensorboard.ingress.host",
    "spec.tensorboard.ingress.className": "tensorboard.ingress.className",
    "spec.tensorboard.ingress.pathPrefix": "tensorboard.ingress.pathPrefix",
    "spec.tensorboard.ingress.tlsSecretName": "tensorboard.ingress.tlsSecretName",
    "spec.runPolicy.cleanPodPolicy": "runPolicy.cleanPodPolicy",
    "spec.runPolicy.activeDeadlineSeconds": "runPolicy.activeDeadlineSeconds",
    "spec.runPolicy.backoffLimit": "runPolicy.backoffLimit",
    "spec.runPolicy.schedulingPolicy.minAvailable": "runPolicy.schedulingPolicy.minAvailable",
    "spec.runPolicy.schedulingPolicy.queue": "runPolicy.schedulingPolicy.queue",
    "spec.runPolicy.schedulingPolicy.priorityClass": "runPolicy.schedulingPolicy.priorityClass",
    "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds":
        "runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
    "spec.lifecycle": "lifecycle",
    "spec.priorityClassName": "priorityClassName",
    "spec.schedulerName": "schedulerName",
    "spec.serviceAccountName": "serviceAccountName",
    "spec.securityContext.runAsUser": "podSecurityContext.runAsUser",
    "spec.securityContext.runAsGroup": "podSecurityContext.runAsGroup",
    "spec.securityContext.fsGroup": "podSecurityContext.fsGroup",
    "spec.securityContext.supplementalGroups.[]": "podSecurityContext.supplementalGroups.[]",
    "spec.runtime": "runtime",
    "spec.queue": "kueue.queue",
    "spec.priority": "kueue.priority",
    "spec.runPolicy.successPolicy": "runPolicy.successPolicy",
}

# Values tfgen writes as "" for "not set": the chart accepts "" besides the spec's grammar
# (its validateValues helper then says what is missing, or the chart uses its default).
EMPTY_IS_UNSET = {
    "experiment.name", "experiment.namespace", "experiment.owner", "image", "roles.worker.image",
    "storage.existingClaim", "storage.nas.server", "storage.nas.mode",
}

# Enums whose absent spec field tfgen writes as "" (the chart's "not set").
EMPTY_IN_ENUM = {"runPolicy.successPolicy"}

# Constrained chart fields with no spec field of the same meaning, and why.
CHART_ONLY = {
    # the spec's single roles have replicas const 1; the chart's role definition is shared
    # by every role and says 1 for those in validateValues
    "roles.master.replicas", "roles.chief.replicas", "roles.evaluator.replicas",
    # tfgen writes resources from cpu/memory/gpus; their bounds are validate/rules/spec.py's
    "resources",
    # the spec's seccompProfile is the type alone (same enum), written as {type: ...}
    "podSecurityContext.seccompProfile",
    # the spec's tfgen.io/rerun-of annotation, which `tfgen rerun` writes from a valid name
    "experiment.rerunOf",
    # from tfgen.yaml's networkPolicy (same pattern in repo-config.schema.json), not the spec
    "networkPolicy",
    # from tfgen.yaml's clusterDomain (the same pattern in repo-config.schema.json)
    "clusterDomain",
    # a sweep's runs: names, suffixes and log dirs derived by tfgen
    # (validate/experiment/sweep.py checks their budget), args and env the spec's own after
    # substitution (checked by the same schema)
    "runs",
}


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        target: Any = root
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _branches(node: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """The node and every schema it requires too (allOf, $ref), resolved."""
    node = _resolve(node, root)
    if not isinstance(node, dict):
        return []
    out = [node]
    for sub in node.get("allOf", []):
        out += _branches(sub, root)
    return out


def _step(node: dict[str, Any], part: str, root: dict[str, Any]) -> Any:
    node = _resolve(node, root)
    if part == "[]":
        return node["items"]
    if part == "{}":
        return node["additionalProperties"]
    if part == "<>":
        return node["propertyNames"]
    if "properties" not in node and "oneOf" in node:  # the spec's env entry, the role forms
        node = next(b for b in node["oneOf"] if part in b.get("properties", {}))
    return node["properties"][part]


def _node(schema: dict[str, Any], path: str) -> Any:
    node: Any = schema
    for part in path.split("."):
        node = _step(node, part, schema)
    return node


def constraints(schema: dict[str, Any], path: str) -> dict[str, Any]:
    found: dict[str, Any] = {"pattern": set()}
    for branch in _branches(_node(schema, path), schema):
        for key in KEYWORDS:
            if key in branch:
                found[key] = branch[key]
        if "pattern" in branch:
            found["pattern"].add(branch["pattern"])
        if "enum" in branch:
            found["enum"] = set(branch["enum"])
    return found


def _line_pattern() -> str:
    raw = json.loads((ROOT / "schemas" / "experiment.schema.json").read_text())
    pattern: str = raw["$defs"]["line"]["pattern"]
    return pattern


LINE = _line_pattern()


@pytest.mark.parametrize("spec_path", sorted(SHARED))
def test_shared_field_has_the_same_bounds(spec_path: str) -> None:
    values_path = SHARED[spec_path]
    spec = constraints(SPEC_SCHEMA, spec_path)
    chart = constraints(VALUES_SCHEMA, values_path)
    if values_path in EMPTY_IS_UNSET:
        spec["pattern"] = {p if p == LINE else f"^$|{p}" for p in spec["pattern"]}
        spec.pop("minLength", None)
    if values_path in EMPTY_IN_ENUM:
        spec["enum"] = spec["enum"] | {""}
    assert chart == spec, f"{spec_path} (spec) vs {values_path} (chart values)"


def test_chart_line_rule_is_the_spec_one() -> None:
    assert VALUES_SCHEMA["definitions"]["line"]["pattern"] == LINE


def _constrained_leaves(node: Any, root: dict[str, Any], path: str = "") -> list[str]:
    node = _resolve(node, root)
    if not isinstance(node, dict):
        return []
    out: list[str] = []
    if any(k in node for k in (*KEYWORDS, "pattern", "enum")) and path:
        out.append(path)
    children: list[tuple[str, Any]] = [
        (k, v) for k, v in node.get("properties", {}).items()
    ]
    if isinstance(node.get("items"), dict):
        children.append(("[]", node["items"]))
    if isinstance(node.get("additionalProperties"), dict):
        children.append(("{}", node["additionalProperties"]))
    if isinstance(node.get("propertyNames"), dict):
        children.append(("<>", node["propertyNames"]))
    for name, child in children:
        out += _constrained_leaves(child, root, f"{path}.{name}" if path else name)
    return out


def test_every_constrained_chart_field_is_compared() -> None:
    compared = set(SHARED.values())
    leaves = _constrained_leaves(VALUES_SCHEMA, VALUES_SCHEMA)
    assert len(leaves) > 40
    unchecked = [
        leaf for leaf in leaves
        if leaf not in compared
        and not any(leaf == c or leaf.startswith(c + ".") or f".{c}." in f".{leaf}."
                    for c in CHART_ONLY)
        and not _same_as_worker(leaf, compared)
    ]
    assert not unchecked, "chart fields with bounds but no spec counterpart listed: " + ", ".join(
        unchecked
    )


def _same_as_worker(leaf: str, compared: set[str]) -> bool:
    """Every role shares one definition in both schemas (the env entries are the top-level
    env's): comparing worker's, and the top-level env, covers the rest."""
    parts = leaf.split(".")
    if len(parts) > 2 and parts[0] == "roles" and parts[1] in naming.ROLES:
        rest = parts[2:]
        same = rest if rest[0] == "env" else ["roles", "worker", *rest]
        return ".".join(same) in compared
    return False


def test_replicas_bound_is_the_naming_budget() -> None:
    """One number: naming.MAX_REPLICAS (indexes 0..999 fit the pod-name budget)."""
    assert constraints(SPEC_SCHEMA, "spec.roles.worker.replicas")["maximum"] == naming.MAX_REPLICAS
    assert constraints(VALUES_SCHEMA, "roles.worker.replicas")["maximum"] == naming.MAX_REPLICAS
    longest = naming.pod_name("x" * naming.MAX_NAME_LENGTH, "Worker", naming.MAX_REPLICAS - 1)
    assert len(longest) <= naming.MAX_LABEL


def test_a_different_bound_is_caught() -> None:
    """The comparison can fail: a changed maximum is seen."""
    changed = json.loads(json.dumps(VALUES_SCHEMA))
    changed["definitions"]["role"]["properties"]["replicas"]["maximum"] = 999
    assert constraints(changed, "roles.worker.replicas") != constraints(
        SPEC_SCHEMA, "spec.roles.worker.replicas"
    )
