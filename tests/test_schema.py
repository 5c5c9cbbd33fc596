"""The schemas themselves: well-formed, documented on every property, closed objects, every
pattern explained in words; defaults are applied; positions map pointers back to lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tfgen.validate.defaults import apply_defaults
from tfgen.validate.document import pointer_text
from tfgen.validate.loader import load_bytes
from tfgen.validate.messages import PATTERN_WORDS
from tfgen.validate.schema import _folded, inlined_schema

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


@pytest.mark.parametrize("name", NAMES)
def test_every_property_has_description_and_examples(name):
    schema = json.loads((SCHEMAS / name).read_text())
    missing, checked = [], 0
    for where, node in _walk(schema):
        for prop, sub in node.get("properties", {}).items():
            checked += 1
            if not sub.get("description") or "examples" not in sub:
                missing.append(f"{where}.{prop}")
    assert checked
    assert missing == []


@pytest.mark.parametrize("name", NAMES)
def test_every_closed_object_says_so(name):
    schema = json.loads((SCHEMAS / name).read_text())
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
