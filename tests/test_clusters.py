"""Several clusters from one repository (issue 49): every spec judged for the cluster it runs on.

Data-driven like test_spec_cases.py, against fixtures/clusters/tfgen.yaml (two clusters: gpu-a,
Kubernetes 1.33 with Kueue queues; gpu-b, 1.30, TFJob only, known to Argo CD by name). Under
specs/valid each case must validate (a `# warn:` header names a warning it must give); under
specs/invalid each must fail with its `# expect:` message on its `# expect-line:`. Under
config-invalid each file is a tfgen.yaml that must be refused with its `# expect:` message at
its `# expect-line:`. Adding a case is adding a file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from helpers import assert_expected_problems, case_headers, copy_repo_parts
from tfgen.cli import main
from tfgen.errors import InputError
from tfgen.gate.argo.wiring import Project, destination_allowed
from tfgen.gate.documents.manifests import RenderedObject
from tfgen.problems import WARNING
from tfgen.validate import experiment_cluster
from tfgen.validate.config.clusters import IMPLICIT
from tfgen.validate.config.load import load_config
from tfgen.validate.experiments import validate_paths

CASES = Path(__file__).parent / "fixtures" / "clusters"
VALID = sorted((CASES / "specs" / "valid").glob("*.yaml"))
INVALID = sorted((CASES / "specs" / "invalid").glob("*.yaml"))
CONFIGS = sorted((CASES / "config-invalid").glob("*.yaml"))
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def config():
    return load_config([CASES])


def _headers(path: Path) -> dict[str, list[str]]:
    return case_headers(path, ("expect", "expect-line", "warn"))


def test_there_are_cases() -> None:
    assert len(VALID) >= 4 and len(INVALID) >= 8 and len(CONFIGS) >= 5


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_case(path: Path, config) -> None:
    result = validate_paths([path], config)
    assert [p.text() for p in result.problems if p.severity != WARNING] == []
    assert [e.name for e in result.experiments] == [path.stem]
    warnings = [p.text() for p in result.problems if p.severity == WARNING]
    wanted = _headers(path).get("warn", [])
    for text in wanted:
        assert [w for w in warnings if text in w], f"expected a warning {text!r}: {warnings}"
    if not wanted:
        assert warnings == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_case(path: Path, config) -> None:
    headers = _headers(path)
    assert path.read_text().startswith("# expect: "), path.name
    result = validate_paths([path], config)
    assert result.experiments == []
    assert_expected_problems(result.problems, headers)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_invalid_config(path: Path, tmp_path: Path) -> None:
    headers = _headers(path)
    shutil.copy(path, tmp_path / "tfgen.yaml")
    with pytest.raises(InputError) as caught:
        load_config([tmp_path])
    text = caught.value.message
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if headers["expect"][0] in line]
    assert lines, f"expected {headers['expect'][0]!r} in:\n{text}"
    assert f"tfgen.yaml:{headers['expect-line'][0]}:" in lines[0], text


def test_which_cluster_a_spec_runs_on(config) -> None:
    gpu_a, gpu_b = config.clusters
    assert config.cluster_of("default", {}) is gpu_a
    assert config.cluster_of("vision", {}) is gpu_b
    assert config.cluster_of("vision", {"cluster": "gpu-a"}) is gpu_a
    assert config.cluster_of("default", {"cluster": "gpu-z"}) is None
    # the read side's way to the cluster: its kubeconfig context (None: the current one)
    assert (gpu_a.context, gpu_b.context) == ("gpu-a-admin", None)
    assert gpu_a.destination == {"server": "https://kubernetes.default.svc", "name": ""}
    assert gpu_b.destination == {"server": "", "name": "gpu-b"}
    # the gate validates rendered objects against the newest cluster's schemas
    assert config.kubernetes_version == "1.33"


def test_a_repository_without_clusters_has_the_one_implicit_cluster() -> None:
    config = load_config([REPO])
    [cluster] = config.clusters
    assert (cluster.name, cluster.declared) == (IMPLICIT, False)
    assert cluster.server == config.argocd["destinationServer"]
    assert cluster.kubernetes_version == config.kubernetes_version == "1.30"
    assert config.cluster_of("ml-team", {}) is cluster
    assert config.cluster_of("ml-team", {"cluster": "in-cluster"}) is None


def test_argo_sends_each_run_to_its_clusters_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rendered from fixtures/clusters: each app.yaml carries its cluster's destination, the
    AppProject allows exactly the clusters' destinations, and `tfgen check` passes."""
    root = copy_repo_parts(tmp_path / "repo", ("charts", "schemas"))
    shutil.copy(CASES / "tfgen.yaml", root / "tfgen.yaml")
    (root / "tfgen.yaml").write_text((root / "tfgen.yaml").read_text().replace(
        "../../../schemas/", "schemas/"))
    (root / "experiments").mkdir()
    for case in ("home-cluster-jobset", "named-cluster"):
        shutil.copy(CASES / "specs" / "valid" / f"{case}.yaml", root / "experiments")
    monkeypatch.chdir(root)
    runner = CliRunner()
    rendered = runner.invoke(main, ["render"], catch_exceptions=False)
    assert rendered.exit_code == 0, rendered.output
    apps = {name: yaml.safe_load((root / "argo/experiments" / name / "app.yaml").read_text())
            for name in ("home-cluster-jobset", "named-cluster")}
    assert {name: (app["cluster"], app["destination"]) for name, app in apps.items()} == {
        "home-cluster-jobset": ("gpu-a", {"server": "https://kubernetes.default.svc",
                                          "name": ""}),
        "named-cluster": ("gpu-b", {"server": "", "name": "gpu-b"}),
    }
    project = yaml.safe_load((root / "argo/project.yaml").read_text())
    assert project["spec"]["destinations"] == [
        {**where, "namespace": ns}
        for where in ({"server": "https://kubernetes.default.svc"}, {"name": "gpu-b"})
        for ns in ("default", "ml-team", "vision")]
    appset = (root / "argo/applicationset.yaml").read_text()
    assert 'server: "{{.destination.server}}"' in appset
    assert 'name: "{{.destination.name}}"' in appset
    checked = runner.invoke(main, ["check", "--no-cache"], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output
    listed = runner.invoke(main, ["list", "--format", "json"], catch_exceptions=False)
    assert {row["name"]: row["cluster"] for row in json.loads(listed.stdout)} == {
        "home-cluster-jobset": "gpu-a", "named-cluster": "gpu-b"}


def test_a_project_destination_allows_only_the_cluster_it_names() -> None:
    project = Project.from_object(RenderedObject({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
        "metadata": {"name": "p"}, "spec": {"destinations": [
            {"server": "https://a.example.com", "namespace": "ml"},
            {"name": "gpu-b", "namespace": "ml"}]}}), "argo/project.yaml")
    assert destination_allowed(project, "https://a.example.com", "", "ml")
    assert destination_allowed(project, "", "gpu-b", "ml")
    assert not destination_allowed(project, "https://b.example.com", "", "ml")
    assert not destination_allowed(project, "", "gpu-c", "ml")
    assert not destination_allowed(project, "", "gpu-b", "other")
    assert not destination_allowed(project, "", "", "ml")


def test_the_read_side_asks_an_experiments_cluster_and_its_context(config) -> None:
    """`experiment_cluster` is what `tfgen status` will ask: the cluster a valid experiment
    runs on, and the kubeconfig context that reads it."""
    [valid] = validate_paths([CASES / "specs" / "valid" / "named-cluster.yaml"], config).experiments
    cluster = experiment_cluster(config, valid.data)
    assert (cluster.name, cluster.context, cluster.shown_destination) == (
        "gpu-b", None, "Argo CD cluster gpu-b")
    home = experiment_cluster(config, {"metadata": {"namespace": "ml-team"}, "spec": {}})
    assert (home.name, home.context) == ("gpu-a", "gpu-a-admin")
    with pytest.raises(InputError, match="cluster \"gpu-z\" is not one of tfgen.yaml's"):
        experiment_cluster(config, {"metadata": {"namespace": "ml-team"},
                                    "spec": {"cluster": "gpu-z"}})
