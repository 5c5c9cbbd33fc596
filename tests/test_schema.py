"""The schemas themselves: well-formed, documented on every property, closed objects, every
pattern explained in words; defaults are applied; positions map pointers back to lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tfgen.validate.schema.defaults import apply_defaults
from tfgen.validate.schema.patterns import PATTERN_WORDS
from tfgen.validate.schema.validator import _folded, inlined_schema
from tfgen.validate.yaml.document import pointer_text
from tfgen.validate.yaml.loader import load_bytes

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
NAMES = ["experiment.schema.json", "repo-config.schema.json"]


def _walk(node: Any, where: str = "$"):
    """Yield (where, subschema) for every subschema reachable by properties/items/$defs/etc."""
    if not isinstance(node, dict):
        return
    yield where, node
    for name, sub in node.get("properties", {}).items():
        yield from _walk(sub, f"{where}.{name}")
    for key in ("items", "additionalProperties", "propertyNames"):
        if isinstance(node.get(key), dict):
            yield from _walk(node[key], f"{where}[{key}]")
    for name, sub in node.get("$defs", {}).items():
        yield from _walk(sub, f"#/$defs/{name}")


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_2020_12(name):
    schema = json.loads((SCHEMAS / name).read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] and schema["title"]


def _raw_and_inlined(name: str) -> list[dict[str, Any]]:
    return [json.loads((SCHEMAS / name).read_text()), inlined_schema(name)]


@pytest.mark.parametrize("name", NAMES)
def test_every_property_has_description_and_examples(name):
    """In the file every property is described; as editors and messages see it (a role with
    its own replicas folded in: the shared role leaves their examples to each role) each also
    has examples."""
    raw, inlined = _raw_and_inlined(name)
    missing, checked = [], 0
    for where, node in _walk(raw):
        for prop, sub in node.get("properties", {}).items():
            checked += 1
            if not sub.get("description"):
                missing.append(f"{where}.{prop}")
    for where, node in _walk(inlined):
        for prop, sub in node.get("properties", {}).items():
            checked += 1
            if not sub.get("description") or "examples" not in sub:
                missing.append(f"inlined {where}.{prop}")
    assert checked
    assert missing == []


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("inlined", [False, True], ids=["file", "inlined"])
def test_every_closed_object_says_so(name, inlined):
    schema = _raw_and_inlined(name)[inlined]
    assert [node for _, node in _walk(schema) if "properties" in node]
    open_objects = [
        where
        for where, node in _walk(schema)
        if "properties" in node and node.get("additionalProperties") is not False
    ]
    assert open_objects == []


@pytest.mark.parametrize("name", NAMES)
def test_every_pattern_is_explained_in_words(name):
    patterns = {
        node["pattern"]
        for _, node in _walk(json.loads((SCHEMAS / name).read_text()))
        if "pattern" in node
    }
    assert patterns
    assert sorted(patterns - set(PATTERN_WORDS)) == []


def test_name_rule_budget():
    name = inlined_schema()["properties"]["metadata"]["properties"]["name"]
    assert name["maxLength"] == 51
    assert "<name>-tensorboard" in name["description"]
    assert len("x" * 51 + "-evaluator-0") <= 63 and len("x" * 51 + "-worker-999") <= 63


def test_ttl_is_not_in_the_schema():
    run_policy = inlined_schema()["properties"]["spec"]["properties"]["runPolicy"]
    assert "ttlSecondsAfterFinished" not in run_policy["properties"]


def test_apply_defaults_fills_nested_defaults_and_leaves_input_alone():
    spec = {
        "metadata": {},
        "spec": {"roles": {"worker": {"replicas": 2}}, "storage": {"nas": {"server": "x"}}},
    }
    before = json.dumps(spec)
    out = apply_defaults(spec)
    assert json.dumps(spec) == before
    worker = out["spec"]["roles"]["worker"]
    assert worker["gpus"] == 0 and worker["gpuResource"] == "nvidia.com/gpu"
    assert worker["restartPolicy"] == "OnFailure" and worker["tolerations"] == []
    assert out["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    assert out["spec"]["tensorboard"]["service"] == {"type": "ClusterIP", "port": 6006}
    assert out["spec"]["storage"]["nas"]["storageClassName"] == "tfgen-nas"
    assert "existingClaim" not in out["spec"]["storage"]
    assert out["metadata"]["namespace"] == "default"
    # Containers from defaults are not shared between documents.
    again = apply_defaults(spec)
    assert again["spec"]["roles"]["worker"]["tolerations"] is not worker["tolerations"]


def test_positions_for_keys_values_and_items():
    doc = load_bytes(b"a:\n  b: [x, {c: 1}]\n  d:\n    - e\n    - f: 2\nlist:\n- one\n", "t.yaml")
    assert doc.locate(("a", "b")) == (2, 6)
    assert doc.locate(("a", "b"), key=True) == (2, 3)
    assert doc.locate(("a", "b", 1, "c")) == (2, 14)
    assert doc.locate(("a", "d", 1, "f")) == (5, 10)
    assert doc.locate(("list", 0)) == (7, 3)
    # An unknown pointer falls back to the nearest ancestor's key.
    assert doc.locate(("a", "d", 5, "zzz")) == (3, 3)
    assert pointer_text(("spec", "roles", "worker", "gpus")) == "$.spec.roles.worker.gpus"
    assert pointer_text(("spec", "env", 0, "name")) == "$.spec.env[0].name"
    assert pointer_text(("metadata", "labels", "app.kubernetes.io/name")) == (
        '$.metadata.labels["app.kubernetes.io/name"]'
    )


ROLE_DEFINITIONS = {"roleSingle": ("master", "chief"), "roleMany": ("worker", "ps"),
                    "roleEvaluator": ("evaluator",)}


def test_roles_share_one_definition():
    """Every role's keys are defined once, in $defs/role; each role's definition adds its
    replicas only, ahead of the shared definition (editors show the first description they
    find), and tfgen reads each role as that one closed object with its own replicas."""
    raw = json.loads((SCHEMAS / "experiment.schema.json").read_text())
    shared = raw["$defs"]["role"]
    roles = raw["properties"]["spec"]["properties"]["roles"]["properties"]
    assert {n for names in ROLE_DEFINITIONS.values() for n in names} == set(roles)
    inlined_roles = inlined_schema()["properties"]["spec"]["properties"]["roles"]["properties"]
    for definition, names in ROLE_DEFINITIONS.items():
        own, base = raw["$defs"][definition]["allOf"]
        assert base == {"$ref": "#/$defs/role"}
        assert list(own) == ["properties"] and list(own["properties"]) == ["replicas"]
        replicas = own["properties"]["replicas"]
        assert replicas["description"] and replicas["examples"]
        for name in names:
            assert roles[name]["$ref"] == f"#/$defs/{definition}"
            role = inlined_roles[name]
            assert role["description"] == roles[name]["description"]
            assert role["additionalProperties"] is False
            assert list(role["properties"]) == list(shared["properties"])
            assert role["properties"]["replicas"] == {
                **shared["properties"]["replicas"], **replicas}
    keys = [k for node in raw["$defs"].values() if isinstance(node, dict)
            for k in node.get("properties", {}) if k in shared["properties"]]
    assert sorted(keys) == sorted(shared["properties"])  # no other definition repeats them


@pytest.mark.parametrize("role", ["master", "chief", "worker", "ps", "evaluator"])
def test_the_inlined_roles_accept_what_the_schema_accepts(role):
    """tfgen's Python validator reads the inlined schema, jsonschema_rs the file: for role
    bodies at the bounds and beyond, and with unknown keys, both say the same."""
    import jsonschema_rs

    file_validator = jsonschema_rs.Draft202012Validator(
        json.loads((SCHEMAS / "experiment.schema.json").read_text()))
    python_validator = Draft202012Validator(inlined_schema())
    base = {"apiVersion": "tfgen.io/v1", "kind": "Experiment",
            "metadata": {"name": "a", "owner": "@team"},
            "spec": {"image": "tf", "storage": {"existingClaim": "data", "mountPath": "/data"}}}
    verdicts = set()
    for replicas in (None, 0, 1, 2, 1000, 1001, "1"):
        for extra in ({}, {"gpuz": 1}, {"gpus": 17}, {"restartPolicy": "never"}):
            body = {**extra, **({} if replicas is None else {"replicas": replicas})}
            spec = json.loads(json.dumps(base))
            spec["spec"]["roles"] = {"worker": {"replicas": 1}, role: body}
            verdict = file_validator.is_valid(spec)
            assert verdict == python_validator.is_valid(spec), (role, body)
            verdicts.add(verdict)
    assert verdicts == {True, False}


def test_an_all_of_one_schema_cannot_say_is_kept():
    closed = {"properties": {"a": {"type": "string"}}, "additionalProperties": False}
    widened = {"allOf": [{"properties": {"b": {}}}, closed]}
    assert _folded(widened) == widened  # folded, "b" would be allowed
    clash = {"allOf": [{"properties": {"a": {"type": "integer"}}}, closed]}
    assert _folded(clash) == clash
    narrowed = {"description": "d", "allOf": [{"properties": {"a": {"maxLength": 3}}}, closed]}
    assert _folded(narrowed) == {
        "description": "d", "properties": {"a": {"type": "string", "maxLength": 3}},
        "additionalProperties": False}
