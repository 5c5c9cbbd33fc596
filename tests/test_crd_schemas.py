"""The CRD schemas in schemas/ are the upstream CRDs converted, byte for byte.

scripts/crd_schemas.py converts the CRDs kept under schemas/upstream/ (verbatim, with their
source and licence) into strict JSON Schemas; converting again must give the committed files,
and the kept files must be what their Go modules ship (the last test asks the Go module proxy).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from tfgen.gate.documents.manifests import ManifestValidator
from tfgen.repo import layout, resources
from tfgen.repo.inputs import snapshot
from tfgen.scaffold.init import InitSettings, repository_files

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "crd_schemas.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crd_schemas", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


crd_schemas = _script()
CRDS = [crd_schemas.Crd(*row) for row in crd_schemas.CRDS]


def test_converting_again_gives_the_committed_schemas() -> None:
    converted = crd_schemas.convert_all()
    assert sorted(converted) == [
        "argoproj.io/application_v1alpha1.json", "argoproj.io/applicationset_v1alpha1.json",
        "argoproj.io/appproject_v1alpha1.json", "jobset.x-k8s.io/jobset_v1alpha2.json",
        "kubeflow.org/tfjob_v1.json"]
    for name, text in converted.items():
        assert (ROOT / "schemas" / name).read_text(encoding="utf-8") == text, (
            f"schemas/{name} differs: run .venv/bin/python scripts/crd_schemas.py")
    committed = {p.relative_to(ROOT / "schemas").as_posix()
                 for p in (ROOT / "schemas").glob("*/*.json")}
    assert committed == set(converted), "a schema in schemas/<group>/ that no CRD makes"


def test_check_fails_on_one_byte_of_difference(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts")
    run = [sys.executable, str(tmp_path / "scripts" / "crd_schemas.py"), "--check"]
    assert subprocess.run(run, capture_output=True, check=False).returncode == 0
    target = tmp_path / "schemas" / "kubeflow.org" / "tfjob_v1.json"
    target.write_bytes(target.read_bytes().replace(b'"integer"', b'"number"', 1))
    result = subprocess.run(run, capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "schemas/kubeflow.org/tfjob_v1.json differs" in result.stderr


@pytest.mark.parametrize("crd", CRDS, ids=lambda c: Path(c.path).name)
def test_kept_crd_is_recorded_with_source_and_licence(crd: Any) -> None:
    record = json.loads((crd.folder / "source.json").read_text())
    assert (record["module"], record["version"]) == (crd.module, crd.version)
    assert record["licence"] == "Apache-2.0" and (crd.folder / record["licenceFile"]).is_file()
    assert record["time"] and record["moduleSum"].startswith("h1:")
    entry = record["files"][crd.kept.name]
    assert entry["path"] == crd.path
    assert hashlib.sha256(crd.kept.read_bytes()).hexdigest() == entry["sha256"]


def test_every_upstream_file_is_in_the_table() -> None:
    kept = {p.relative_to(ROOT).as_posix() for p in (ROOT / "schemas" / "upstream").glob("*/*")}
    listed = {c.kept.relative_to(ROOT).as_posix() for c in CRDS}
    extra = {f"{c.folder.relative_to(ROOT).as_posix()}/{name}" for c in CRDS
             for name in ("source.json", "LICENSE")}
    assert kept == listed | extra


def _open_objects(node: Any, where: str = "$") -> list[str]:
    """Object schemas that accept unknown fields."""
    found = []
    if isinstance(node, dict):
        if (node.get("type") in ("object", ["object", "null"]) or "properties" in node) and \
                node.get("additionalProperties") is None:
            found.append(where)
        for key, child in node.items():
            found += _open_objects(child, f"{where}/{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _open_objects(child, f"{where}/{index}")
    return found


def _preserved(node: Any, where: str = "$") -> set[str]:
    """Object schemas where a CRD keeps unknown fields (x-kubernetes-preserve-unknown-fields)."""
    found = set()
    if isinstance(node, dict):
        if node.get("x-kubernetes-preserve-unknown-fields") and \
                (node.get("type") == "object" or "properties" in node):
            found.add(where)
        for key, child in node.items():
            if not key.startswith("x-kubernetes-"):
                found |= _preserved(child, f"{where}/{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found |= _preserved(child, f"{where}/{index}")
    return found


@pytest.mark.parametrize("crd", CRDS, ids=lambda c: Path(c.path).name)
def test_open_exactly_where_the_crd_preserves_unknown_fields(crd: Any) -> None:
    document = yaml.safe_load(crd.kept.read_text())
    for version in document["spec"]["versions"]:
        upstream = version["schema"]["openAPIV3Schema"]
        name = resources.crd_schema_name(f"{document['spec']['group']}/{version['name']}",
                                         document["spec"]["names"]["kind"])
        converted = json.loads((ROOT / "schemas" / str(name)).read_text())
        # the root: at $, properties are `properties` of the schema (metadata is ObjectMeta)
        assert set(_open_objects(converted)) == _preserved(upstream)


def test_conversion_rules() -> None:
    node = {
        "type": "object",
        "description": "dropped",
        "properties": {
            "description": {"type": "string", "description": "a field named like a keyword"},
            "port": {"x-kubernetes-int-or-string": True,
                     "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "bare": {"x-kubernetes-int-or-string": True},
            "maybe": {"type": "string", "nullable": True},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "properties": {"inner": {"type": "object", "properties": {"a": {}}}}},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "empty": {"type": "object"},
            "list": {"type": "array", "items": {"type": "object", "properties": {"b": {}}},
                     "x-kubernetes-list-type": "atomic"},
        },
        "x-kubernetes-validations": [{"rule": "self.a == 1"}],
    }
    assert crd_schemas.convert_node(node) == {
        "type": "object",
        "properties": {  # a field may be null: the API server drops it
            "description": {"type": ["string", "null"]},
            "port": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            "bare": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            "maybe": {"type": ["string", "null"]},
            "free": {"type": ["object", "null"], "properties": {"inner": {
                "type": ["object", "null"], "properties": {"a": {}},
                "additionalProperties": False}}},
            "map": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
            "empty": {"type": ["object", "null"], "additionalProperties": False},
            "list": {"type": ["array", "null"], "items": {
                "type": "object", "properties": {"b": {}}, "additionalProperties": False}},
        },
        "additionalProperties": False,
    }


def test_converted_schemas_judge_the_crd_kinds() -> None:
    validator = ManifestValidator("1.30", resources.schema_dir())
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "mnist"},
              "spec": {"replicatedJobs": [{"name": "worker", "template": {"spec": {
                  "template": {"spec": {"containers": [{"name": "tensorflow",
                                                        "image": "tf:2"}]}}}}}]}}
    assert validator.errors(jobset) == []
    jobset["spec"]["replicatedJobs"][0]["replicaz"] = 2
    jobset["metadata"]["labelz"] = {}
    assert [pointer for pointer, _ in validator.errors(jobset)] == [
        "$.metadata", "$.spec.replicatedJobs[0]"]
    assert validator.errors({**jobset, "apiVersion": "jobset.x-k8s.io/v1"})[0][0] == "$.kind"


@pytest.mark.go  # Go fetches the modules
def test_kept_crds_are_what_their_go_modules_ship() -> None:
    """The Go module proxy serves each module (checked against the Go checksum database); the
    kept files must be those bytes."""
    result = subprocess.run([sys.executable, str(SCRIPT), "--fetch", "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_upstream_crds_are_no_input_and_not_handed_on() -> None:
    """tfgen reads the converted schemas; the CRDs they come from are no input of a check
    (nor of its cache key), and `tfgen init` gives a new repository only the converted ones."""
    hashed = snapshot(ROOT).hashes
    assert "schemas/kubeflow.org/tfjob_v1.json" in hashed
    assert not [rel for rel in hashed if rel.startswith(f"{layout.UPSTREAM_SCHEMAS_DIR}/")]
    files = repository_files(InitSettings(tfgen_source="git+https://github.com/acme/tfgen.git@v0.1.0"))
    assert "schemas/jobset.x-k8s.io/jobset_v1alpha2.json" in files
    assert not [rel for rel in files if rel.startswith(f"{layout.UPSTREAM_SCHEMAS_DIR}/")]
