"""The repository as Argo CD sees it: resolve every Application from the committed
argo/applicationset.yaml and app.yaml files, render each with the real helm exactly as the
repo-server would, and check the TFJob against the experiment's spec. (What Kueue writes into
a queued job is no difference to any Application: shown on the real Kueue and Argo CD, in
tests/lab/test_gitops.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tfgen.gate.argo import applications
from tfgen.gate.helm import command as helm
from tfgen.repo import layout, naming, runtimes
from tfgen.validate.experiment import sweep

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def resolution() -> applications.Resolution:
    return applications.resolve_applications(REPO)


@pytest.fixture(scope="module")
def rendered(resolution: applications.Resolution) -> dict[str, list[dict[str, Any]]]:
    if not (REPO / layout.CHART_PATH / "Chart.yaml").is_file():
        pytest.skip(f"{layout.CHART_PATH} is not in this checkout")
    out = {}
    for app in resolution.applications:
        text = helm.template(helm.RenderJob(app.release_name, app.namespace,
                                            REPO / app.source_path, tuple(app.value_files)))
        out[app.name] = [d for d in yaml.safe_load_all(text) if d]
    return out


def test_every_spec_becomes_one_application(resolution: applications.Resolution) -> None:
    assert resolution.problems == []
    specs = sorted(p.stem for p in (REPO / "experiments").glob("*.yaml"))
    assert specs, "the repository ships example experiments"
    assert sorted(a.name for a in resolution.applications) == specs
    for app in resolution.applications:
        assert app.release_name == app.name and app.project == "tfgen-experiments"
        assert app.manifest_generate_paths == [layout.CHART_PATH,
                                               f"{layout.GENERATED_DIR}/{app.name}"]
        assert len(app.value_files) == 1  # argo/experiments/<name>/values.yaml
        assert all(REPO in p.parents for p in app.value_files)


def test_job_matches_the_spec(resolution: applications.Resolution,
                               rendered: dict[str, list[dict[str, Any]]]) -> None:
    assert resolution.applications
    for app in resolution.applications:
        spec = yaml.safe_load((REPO / "experiments" / f"{app.name}.yaml").read_text())
        runtime = runtimes.by_name(spec["spec"].get("runtime", runtimes.DEFAULT.name))
        jobs = [d for d in rendered[app.name] if runtimes.of_object(d["apiVersion"], d["kind"])]
        assert {runtimes.of_object(d["apiVersion"], d["kind"]) for d in jobs} == {runtime}
        # one job per run: the experiment's name, or <name>-<suffix> for a sweep's runs
        runs = sweep.runs(spec["spec"])
        assert [t["metadata"]["name"] for t in jobs] == [
            naming.job_name(app.name, run.suffix) for run in runs]
        for tfjob in map(runtime.as_tfjob, jobs):
            assert tfjob["metadata"]["namespace"] == app.namespace == spec["metadata"].get(
                "namespace", "default")
            replica_specs = tfjob["spec"]["tfReplicaSpecs"]
            expected = {role: cfg for role, cfg in spec["spec"]["roles"].items()}
            assert expected, app.name
            assert {k.lower() for k in replica_specs} == set(expected)
            for key, replica in replica_specs.items():
                role = expected[key.lower()]
                assert replica["replicas"] == role.get("replicas", 1), (app.name, key)
                [container] = [c for c in replica["template"]["spec"]["containers"]
                               if c["name"] == "tensorflow"]
                limits = container.get("resources", {}).get("limits", {})
                gpus = role.get("gpus", 0)
                resource = role.get("gpuResource", "nvidia.com/gpu")
                assert int(limits.get(resource, 0)) == gpus, (app.name, key)


def test_generated_argo_files_are_tfgen_labelled(resolution: applications.Resolution) -> None:
    manifests = applications.generated_applications(REPO)
    assert len(manifests) == len(resolution.applications) > 0
    for manifest in manifests:
        assert manifest["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "tfgen"


def test_helm3_renders_the_same(resolution: applications.Resolution,
                                rendered: dict[str, list[dict[str, Any]]]) -> None:
    # Argo CD 3.3/3.4 bundle Helm 3, 3.5 bundles Helm 4: both must give the cluster the same.
    helm3 = helm.find_helm(3)
    assert resolution.applications
    for app in resolution.applications:
        text = helm.template(helm.RenderJob(app.release_name, app.namespace,
                                            REPO / app.source_path, tuple(app.value_files)),
                             helm=helm3)
        assert rendered[app.name], app.name
        assert [d for d in yaml.safe_load_all(text) if d] == rendered[app.name], app.name
