"""kubeconform, the second validator: always built (`make dev`), held to the builtin one.

`tfgen check --validator kubeconform` runs on this repository's experiments (and, with
kubeconform found, every `tfgen check` of the hostile corpus runs it beside the builtin
validator: tests/test_hostile.py); on every object tfgen renders here (the bundled
experiments, every chart ci scenario, the argo/ wiring) and on property-generated breakages of
them, kubeconform and the builtin validator give the same verdict at the same fields. Its
findings read like every other problem of tfgen's.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from click.testing import CliRunner
from helpers import copy_repo_parts, examples, go_tool, node_paths, rendered_here
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.errors import EnvironmentProblem
from tfgen.gate.documents import kubeconform
from tfgen.gate.documents.kubeconform import (
    errors_in,
    find_kubeconform,
    layout_dirname,
    require_kubeconform,
    schema_location,
    write_schema_layout,
)
from tfgen.gate.documents.manifests import ManifestValidator, RenderedObject
from tfgen.repo import resources

pytestmark = pytest.mark.go  # runs a Go tool of `make go-tools`


KINDS = [("v1", "PersistentVolume"), ("apps/v1", "Deployment"), ("v1", "Service"),
         ("networking.k8s.io/v1", "Ingress"), ("kubeflow.org/v1", "TFJob")]
VALIDATOR = ManifestValidator("1.30", resources.schema_dir())


@pytest.fixture(autouse=True)
def pinned_kubeconform(monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = go_tool("kubeconform")
    monkeypatch.setenv("TFGEN_KUBECONFORM", str(binary))
    return binary


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [
            r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_layout_is_standalone_and_as_strict_as_builtin(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    (schemas / "kubeflow.org").mkdir(parents=True)
    (schemas / "kubeflow.org" / "tfjob_v1.json").write_text(json.dumps({
        "type": "object", "properties": {"apiVersion": {"const": "kubeflow.org/v1"},
                                         "kind": {"const": "TFJob"}}}))
    validator = ManifestValidator("1.30", schemas)
    folder = write_schema_layout(validator, KINDS, tmp_path / "layout")
    assert folder.name == layout_dirname("1.30") == "v1.30.0-standalone-strict"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["deployment-apps-v1.json", "ingress-networking-v1.json",
                     "persistentvolume-v1.json", "service-v1.json", "tfjob-kubeflow-v1.json"]
    pv_schema = json.loads((folder / "persistentvolume-v1.json").read_text())
    refs = _refs(pv_schema)
    assert refs and all(ref.startswith("#/$defs/") for ref in refs)  # nothing to fetch
    standalone = jsonschema_rs.validator_for(pv_schema)
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "p"},
          "spec": {"nfs": {"server": "s", "path": "/"}, "capacity": {"storage": "1Gi"}}}
    assert standalone.is_valid(pv) and not validator.errors(pv)
    pv["spec"]["nfs"]["serverr"] = "typo"
    assert not standalone.is_valid(pv) and validator.errors(pv)


def test_schema_location_matches_kubeconform_template(tmp_path: Path) -> None:
    assert schema_location(tmp_path) == (
        f"{tmp_path}/{{{{ .NormalizedKubernetesVersion }}}}-standalone{{{{ .StrictSuffix }}}}"
        "/{{ .ResourceKind }}{{ .KindSuffix }}.json")


def test_missing_kubeconform_is_exit_2(runner: CliRunner, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TFGEN_KUBECONFORM")
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    assert find_kubeconform() is None
    with pytest.raises(EnvironmentProblem):
        require_kubeconform()
    (tmp_path / "tfgen.yaml").write_text("apiVersion: tfgen.io/v1\nkind: RepoConfig\n")
    result = runner.invoke(main, ["check", "--root", str(tmp_path), "--validator",
                                  "kubeconform"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "kubeconform not found" in result.output


# --- tfgen check --validator kubeconform -----------------------------------------------------


def test_check_with_kubeconform_on_the_bundled_experiments(runner: CliRunner,
                                                           tmp_path: Path) -> None:
    root = copy_repo_parts(tmp_path / "repo")
    bundled = sorted(p.stem for p in (root / "experiments").glob("*.yaml"))
    assert len(bundled) >= 4
    result = runner.invoke(main, ["check", "--root", str(root), "--validator", "kubeconform"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"{len(bundled)} experiments checked: all clear")


def test_check_with_kubeconform_names_the_field_not_a_temp_path(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    service = root / "charts" / "tfjob-experiment" / "templates" / "tensorboard-service.yaml"
    text = service.read_text()
    assert "spec:\n" in text
    service.write_text(text.replace("spec:\n", "spec:\n  sessionAffinityy: None\n", 1))
    result = runner.invoke(main, ["check", "--root", str(root), "--validator", "kubeconform"],
                           catch_exceptions=False)
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if "kubeconform:" in line]
    assert lines and all(line.startswith("experiments/") for line in lines)
    assert all("Service/" in line and " $.spec: kubeconform: additional properties "
               "'sessionAffinityy' not allowed" in line for line in lines), lines
    assert "tfgen-kubeconform-" not in result.output and "file://" not in result.output
    assert "remove the field or fix its spelling" in result.stdout


# --- the same verdict as the builtin validator -----------------------------------------------


RENDERED = rendered_here()


def _builtin(docs: list[dict[str, Any]]) -> list[set[str]]:
    return [{pointer for pointer, _ in VALIDATOR.errors(doc)} for doc in docs]


def _kubeconform(docs: list[dict[str, Any]]) -> list[set[str]]:
    found: list[set[str]] = [set() for _ in docs]
    for index, pointer, _ in kubeconform.run([RenderedObject(doc=d) for d in docs], VALIDATOR):
        found[index].add(pointer)
    return found


def test_every_rendered_object_is_valid_to_both() -> None:
    kinds = {(o.api_version, o.kind) for o in RENDERED}
    assert {("kubeflow.org/v1", "TFJob"), ("argoproj.io/v1alpha1", "ApplicationSet"),
            ("argoproj.io/v1alpha1", "AppProject"), ("v1", "PersistentVolume")} <= kinds
    docs = [o.doc for o in RENDERED]
    assert _kubeconform(docs) == _builtin(docs) == [set()] * len(docs)


# What a breakage puts where a value was: every JSON type, and strings that look like others.
ODD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-1.5, 1.5),
                       st.sampled_from(["", "x", "1", "true", "500m", "4Gi", "-1"]),
                       st.just([]), st.just(["x"]), st.just({}), st.just({"x": 1}))



@st.composite
def breakages(draw: st.DrawFn) -> dict[str, Any]:
    """A rendered object with one change: a value replaced, a key added or a key removed."""
    doc = copy.deepcopy(draw(st.sampled_from(RENDERED)).doc)
    path = draw(st.sampled_from(node_paths(doc)))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    how = draw(st.sampled_from(["replace", "add", "remove"]))
    if how == "add" and isinstance(parent[path[-1]], dict):
        parent[path[-1]][draw(st.sampled_from(["x", "namee", "image", "spec"]))] = draw(ODD_VALUES)
    elif how == "remove" and isinstance(parent, dict) and path[-1] not in ("apiVersion", "kind"):
        del parent[path[-1]]
    elif path[-1] not in ("apiVersion", "kind"):
        parent[path[-1]] = draw(ODD_VALUES)
    return doc


@settings(max_examples=examples(8), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(breakages(), min_size=40, max_size=40))
def test_kubeconform_and_builtin_agree_on_breakages(docs: list[dict[str, Any]]) -> None:
    """Each object of a batch (one kubeconform process) has the same verdict from both, and
    the same fields found wrong."""
    builtin = _builtin(docs)
    assert _kubeconform(docs) == builtin, [
        (d.get("kind"), b) for d, b in zip(docs, builtin, strict=True)]


# --- its words -------------------------------------------------------------------------------


def test_kubeconform_text_becomes_pointers_and_innermost_errors() -> None:
    doc = {"metadata": {"labels": {"a/b": 1}}, "spec": {"ports": [{"port": "x"}]}}
    scratch = "/tmp/tfgen-kubeconform-abc"
    text = (f"problem validating schema. Check JSON formatting: jsonschema validation failed "
            f"with 'file://{scratch}/s/v1.30.0-standalone-strict/service-v1.json#' - at "
            "'/metadata': validation failed   - at '/metadata/labels/a~1b': got number, want "
            "string - at '/spec/ports/0/port': got string, want integer - at "
            "'/spec/ports/0/port': oneOf failed, none matched")
    assert errors_in(text, doc, scratch) == [
        ('$.metadata.labels["a/b"]', "got number, want string"),
        ("$.spec.ports[0].port", "got string, want integer; oneOf failed, none matched"),
    ]
    unreadable = ("error while parsing: error unmarshaling JSON: while decoding JSON: json: "
                  "cannot unmarshal object into Go struct field .Metadata.Name of type string")
    assert errors_in(unreadable, doc, scratch) == [("$.metadata.name", "got object, want string")]
    assert errors_in("could not find schema for Servicez", doc, scratch) == [
        ("$.kind", "could not find schema for Servicez")]
    assert errors_in(f"cannot read file://{scratch}/in/000001.json", doc, scratch) == [
        ("$", "cannot read /in/000001.json")]
