"""kubeconform support: the schema layout it needs, and a clear exit 2 when it is absent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema_rs
import pytest
from click.testing import CliRunner
from tfgen.cli import main
from tfgen.errors import EnvironmentProblem
from tfgen.gate.kubeconform import (
    find_kubeconform,
    layout_dirname,
    require_kubeconform,
    schema_location,
    write_schema_layout,
)
from tfgen.gate.manifests import ManifestValidator

KINDS = [("v1", "PersistentVolume"), ("apps/v1", "Deployment"), ("v1", "Service"),
         ("networking.k8s.io/v1", "Ingress"), ("kubeflow.org/v1", "TFJob")]


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [
            r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_layout_is_standalone_and_as_strict_as_builtin(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "kubeflow.org").mkdir()
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


@pytest.mark.skipif(shutil.which("kubeconform") is not None, reason="kubeconform installed")
def test_missing_kubeconform_is_exit_2(runner: CliRunner, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TFGEN_KUBECONFORM", raising=False)
    assert find_kubeconform() is None
    with pytest.raises(EnvironmentProblem):
        require_kubeconform()
    (tmp_path / "tfgen.yaml").write_text("apiVersion: tfgen.io/v1\nkind: RepoConfig\n")
    result = runner.invoke(main, ["check", "--root", str(tmp_path), "--validator",
                                  "kubeconform"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "kubeconform not found" in result.output
