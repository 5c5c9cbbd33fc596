"""No string in a spec can change the shape of what the chart renders.

Property: fill any string field of a valid spec (the walkthrough with every optional field set)
with hostile text (line breaks and YAML, template braces, quotes, '#', ': ', tabs, Unicode line
separators). Either the validate stage refuses it, with a one-line problem at a line of the
file, or the real helm renders the values tfgen writes for it into objects with exactly the
keys, recursively, of the baseline render: the text stays a value, it never becomes a key, an
object or a field of the pod.

Hypothesis runs derandomized with a bounded number of examples, so CI sees the same cases each
run; helm runs only for the values validate accepts.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import examples, template
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.gate.helm.command import find_helm
from tfgen.render.generated import dump_yaml
from tfgen.validate.config.load import RepoConfig, load_config
from tfgen.validate.experiments import check_file
from tfgen.validate.rules.values import build_values
from tfgen.validate.schema.patterns import ONE_LINE
from tfgen.validate.schema.validator import inlined_schema, python_pattern

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "tfjob-experiment"
WALKTHROUGH = ROOT / "experiments" / "distributed-mnist.yaml"

# Values that may span lines: they reach the chart through toYaml (or a quoted scalar) and a
# program, a certificate or a long note may need several lines. Every other string is one line.
MULTI_LINE = {
    "spec.command.[]", "spec.args.[]", "spec.env.[].value",
    "spec.roles.*.command.[]", "spec.roles.*.args.[]", "spec.roles.*.env.[].value",
    "metadata.annotations.{}",
}


def full_spec() -> dict[str, Any]:
    """The walkthrough with every optional string field set, so that every conditional key of
    the chart is rendered in the baseline."""
    data: dict[str, Any] = yaml.safe_load(WALKTHROUGH.read_text())
    data["metadata"]["annotations"] = {"example.com/ticket": "ML-1"}
    spec = data["spec"]
    spec.update(
        schedulerName="volcano",
        priorityClassName="high",
        serviceAccountName="trainer",
        workingDir="/app",
        imagePullSecrets=["regcred"],
    )
    spec["env"].append({"name": "TOKEN", "secretKeyRef": {"name": "tokens", "key": "api"}})
    worker = spec["roles"]["worker"]
    worker.update(
        image="tensorflow/tensorflow:2.16.1-gpu",
        command=["python", "/app/worker.py"],
        args=["--steps=100"],
        env=[{"name": "ROLE", "value": "worker"}],
        nodeSelector={"accelerator": "v100"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                      "effect": "NoSchedule"}],
    )
    spec["storage"]["nas"]["mountOptions"] = ["nolock"]
    spec["tensorboard"]["ingress"] = {
        "enabled": True, "host": "tb.example.com", "className": "nginx",
        "pathPrefix": "/tb/distributed-mnist", "tlsSecretName": "tb-tls",
    }
    spec["runPolicy"]["schedulingPolicy"] = {"queue": "default", "priorityClass": "high"}
    return data


def string_fields(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a string value (map values and list items alike)."""
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in string_fields(v, (*path, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in string_fields(v, (*path, i))]
    return [path] if isinstance(data, str) else []


BASE = full_spec()
FIELDS = string_fields(BASE)

HOSTILE = [
    "\n", "\r\n", "\n          hostNetwork: true\n          hostPID: true", "\n- privileged",
    "{{ .Release.Name }}", "{{", "}}", '"', "'", "#", " #x", ": ", "- ", "\u2028", "\u2029",
    "\t", "\x85", "\x00", "\x1b[0m", "&anchor", "*alias", "!!python/object", "%TAG", "`", "|",
    ">", "\\", "\\n", "---", "...", " ", "key: value", "[a, b]", "{a: b}", "@", "?", "~", "y",
]
hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE), st.text(st.characters(codec="utf-8"), max_size=4)),
    min_size=1, max_size=5,
).map("".join).filter(bool)


@cache
def config() -> RepoConfig:
    return load_config(cwd=ROOT)


def validate(data: dict[str, Any]) -> tuple[dict[str, Any] | None, list[Any]]:
    """The validate stage on `data` written as a file (JSON, a subset of YAML whose escapes
    carry every character): (complete data or None, problems)."""
    raw = json.dumps(data).encode()
    # always the walkthrough's file: a hostile name is judged as a name, not as a file name
    checked, problems = check_file(WALKTHROUGH, "experiments/distributed-mnist.yaml", raw, config())
    return (checked.data if checked and not problems else None), problems


def skeleton(node: Any) -> Any:
    """The keys of every mapping, recursively; scalars are all alike."""
    if isinstance(node, dict):
        return {key: skeleton(value) for key, value in node.items()}
    if isinstance(node, list):
        return [skeleton(item) for item in node]
    return None


def rendered_skeleton(data: dict[str, Any], tmp: Path) -> list[Any]:
    values = tmp / "values.yaml"
    values.write_text(dump_yaml(build_values(data)), encoding="utf-8")
    out = template(CHART, data["metadata"]["name"], data["metadata"]["namespace"], [values],
                   helm=find_helm(4))
    docs = [doc for doc in yaml.safe_load_all(out) if doc]
    return sorted((skeleton(doc) for doc in docs), key=json.dumps)


@cache
def baseline(tmp: Path) -> list[Any]:
    data, problems = validate(BASE)
    assert data is not None, [p.text() for p in problems]
    return rendered_skeleton(data, tmp)


ACCEPTED: list[tuple[Any, ...]] = []  # what validate let through, for the test below


def _set(data: Any, path: tuple[Any, ...], value: str) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def test_the_baseline_sets_every_string_field_and_validates(tmp_path: Path) -> None:
    assert len(FIELDS) >= 40
    # PV, PVC, TFJob, TensorBoard Deployment, Service and Ingress, two NetworkPolicies: every
    # template renders
    assert len(baseline(tmp_path)) == 8


@settings(max_examples=examples(150), derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), text=hostile_text, keep=st.booleans())
def test_hostile_text_is_refused_or_stays_a_value(
    tmp_path: Path, field: tuple[Any, ...], text: str, keep: bool
) -> None:
    data = copy.deepcopy(BASE)
    original = data
    for part in field:
        original = original[part]
    _set(data, field, (str(original) + text) if keep else text)
    complete, problems = validate(data)
    if complete is None:
        assert problems, f"refused without a problem: {field}"
        for problem in problems:
            assert problem.line > 0, problem.text()
            assert "\n" not in problem.text() and "\u2028" not in problem.text(), problem.text()
        return
    ACCEPTED.append(field)
    assert rendered_skeleton(complete, tmp_path) == baseline(tmp_path), (
        f"{'.'.join(map(str, field))} = {text!r} changed the rendered objects' keys"
    )


def _schema_strings(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every string-valued place in the (inlined) spec schema, as a dotted path."""
    if not isinstance(node, dict):
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    if node.get("type") == "string" or any(
        isinstance(b, dict) and b.get("type") == "string" for b in node.get("allOf", [])
    ):
        out.append((path, node))
    for key, child in node.get("properties", {}).items():
        out += _schema_strings(child, f"{path}.{key}" if path else key)
    for branch in node.get("oneOf", []):
        out += _schema_strings(branch, path)
    if isinstance(node.get("items"), dict):
        out += _schema_strings(node["items"], f"{path}.[]")
    if isinstance(node.get("additionalProperties"), dict):
        out += _schema_strings(node["additionalProperties"], f"{path}.{{}}")
    return out


def _refuses(node: dict[str, Any], text: str) -> bool:
    if "const" in node or "enum" in node:
        return text not in (node.get("enum") or [node.get("const")])
    patterns = [node.get("pattern")] + [
        b.get("pattern") for b in node.get("allOf", []) if isinstance(b, dict)
    ]
    return any(p and not python_pattern(p).search(text) for p in patterns)


def _multi_line(path: str) -> bool:
    parts = path.split(".")
    generic = ".".join("*" if len(parts) > 2 and parts[1] == "roles" and i == 2 else part
                       for i, part in enumerate(parts))
    return path in MULTI_LINE or generic in MULTI_LINE


@pytest.mark.parametrize("separator", ["\n", "\r", "\t", "\x7f", "\x85", "\u2028", "\u2029"])
def test_every_single_line_field_refuses_control_characters(separator: str) -> None:
    fields = _schema_strings(inlined_schema())
    assert len(fields) > 50
    open_fields = [
        path for path, node in fields
        if not _multi_line(path) and not _refuses(node, f"ok{separator}x: 1")
    ]
    assert not open_fields, f"single-line fields that accept {separator!r}: {open_fields}"
    # and the exceptions are real fields
    assert all(any(_multi_line(path) for path, _ in fields) for _ in MULTI_LINE)


def test_one_line_rule_is_one_definition_everywhere() -> None:
    line = json.loads((ROOT / "schemas" / "experiment.schema.json").read_text())["$defs"]["line"]
    config_schema = json.loads((ROOT / "schemas" / "repo-config.schema.json").read_text())
    values_schema = json.loads((CHART / "values.schema.json").read_text())
    assert config_schema["$defs"]["line"] == line
    assert line["pattern"] == ONE_LINE  # the pattern patterns.py puts in words
    assert values_schema["definitions"]["line"]["pattern"] == line["pattern"]


def test_hostile_text_reached_helm() -> None:
    """The property above is not vacuous: some hostile values are legitimate (commands,
    arguments, env values, annotation values) and went through the real render."""
    if not ACCEPTED:
        pytest.skip("runs after the property test (run the whole file)")
    assert len({path[:2] for path in ACCEPTED}) >= 2


@pytest.mark.parametrize("where", [("metadata", "labels"), ("metadata", "annotations"),
                                   ("spec", "roles", "worker", "nodeSelector")])
@pytest.mark.parametrize("key", ["team\nhostNetwork", "a: b", "{{ x }}", "a\u2028b", "#x", "a b"])
def test_hostile_map_keys_are_refused(where: tuple[str, ...], key: str) -> None:
    """Map keys reach the chart through toYaml, but a key is a name: it must be a label key."""
    data = copy.deepcopy(BASE)
    node = data
    for part in where:
        node = node.setdefault(part, {})
    node[key] = "v"
    complete, problems = validate(data)
    assert complete is None
    assert any("label/annotation key" in p.text() and p.line > 0 for p in problems), [
        p.text() for p in problems]
