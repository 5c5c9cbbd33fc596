"""The repository as Argo CD sees it: resolve every Application from the committed
argo/applicationset.yaml and app.yaml files, render each with the real helm exactly as the
repo-server would, and check the TFJob against the experiment's spec; what Kueue writes
into a queued TFJob or JobSet is no difference to any Application (the real jq)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tfgen.gate.argo import applications
from tfgen.gate.helm import command as helm
from tfgen.repo import chart, layout, naming, runtimes
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


# --- Kueue's writes, as each Application's ignoreDifferences normalises them ------------------

JQ = shutil.which("jq")  # jq's del() reads paths as Argo CD's gojq does


def _removed(doc: Any, pointer: str) -> None:
    """RFC 6902 `remove` of a JSON pointer; a missing path leaves the document alone (Argo CD
    skips a patch that does not apply)."""
    *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    for part in parents:
        doc = doc.get(part) if isinstance(doc, dict) else None
    if isinstance(doc, dict):
        doc.pop(last, None)


def normalised(doc: dict[str, Any], rules: list[dict[str, Any]]) -> dict[str, Any]:
    """What Argo CD compares of an object: every matching rule's pointers removed, then each
    jq path expression deleted (`del(<expression>)`, as Argo CD's normaliser runs it)."""
    doc = copy.deepcopy(doc)
    for rule in rules:
        if (runtimes.group_of(doc["apiVersion"]), doc["kind"]) != (rule["group"], rule["kind"]):
            continue
        for pointer in rule.get("jsonPointers", []):
            _removed(doc, pointer)
        for expression in rule.get("jqPathExpressions", []):
            assert JQ is not None
            done = subprocess.run([JQ, "-c", f"del({expression})"], input=json.dumps(doc),
                                  capture_output=True, text=True, check=True)
            doc = json.loads(done.stdout)
    return doc


# What Kueue's webhook does to a queued job: suspended at create, then on admission unsuspended
# with the flavour's node labels and taints' tolerations in every pod template.
FLAVOUR_NODES = {"node.kubernetes.io/instance-type": "ecs.gn7i-c8g1.2xlarge"}
FLAVOUR_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if doc["kind"] == runtimes.TFJOB.kind:
        return [r["template"]["spec"] for r in doc["spec"]["tfReplicaSpecs"].values()]
    return [r["template"]["spec"]["template"]["spec"] for r in doc["spec"]["replicatedJobs"]]


def kueue_states(desired: dict[str, Any]) -> list[dict[str, Any]]:
    """The live object while queued, and once admitted."""
    def suspended(doc: dict[str, Any], value: bool) -> dict[str, Any]:
        if doc["kind"] == runtimes.TFJOB.kind:
            doc["spec"].setdefault("runPolicy", {})["suspend"] = value
        else:
            doc["spec"]["suspend"] = value
        return doc

    queued = suspended(copy.deepcopy(desired), True)
    admitted = suspended(copy.deepcopy(desired), False)
    for pod in pod_specs(admitted):
        pod["nodeSelector"] = {**pod.get("nodeSelector", {}), **FLAVOUR_NODES}
        pod["tolerations"] = [*pod.get("tolerations", []), FLAVOUR_TOLERATION]
    return [queued, admitted]


def a_jobset() -> dict[str, Any]:
    """A JobSet as the JobSet runtime gives one (two replicated Jobs of pods), not suspended."""
    def job(name: str, replicas: int) -> dict[str, Any]:
        pod = {"restartPolicy": "OnFailure", "subdomain": "mnist",
               "containers": [{"name": "tensorflow", "image": "tf:2.16"}]}
        return {"name": name, "replicas": replicas,
                "template": {"spec": {"completionMode": "Indexed", "parallelism": 1,
                                      "completions": 1,
                                      "template": {"spec": pod}}}}

    return {"apiVersion": runtimes.JOBSET.api_version, "kind": runtimes.JOBSET.kind,
            "metadata": {"name": "mnist", "namespace": "default",
                         "labels": {chart.KUEUE_QUEUE_LABEL: "team-gpus"}},
            "spec": {"suspend": False, "replicatedJobs": [job("ps", 2), job("worker", 2)]}}


def runtime_objects(rendered: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    tfjobs = [d for docs in rendered.values() for d in docs if d["kind"] == runtimes.TFJOB.kind]
    assert tfjobs
    return [*tfjobs, a_jobset()]


@pytest.mark.skipif(JQ is None, reason="needs jq")
def test_what_kueue_writes_is_no_difference(
        rendered: dict[str, list[dict[str, Any]]]) -> None:
    for app in applications.generated_applications(REPO):
        rules = app["spec"]["ignoreDifferences"]
        for desired in runtime_objects(rendered):
            for live in kueue_states(desired):
                assert live != desired  # Kueue did change it ...
                # ... and Argo CD, comparing as the Application says, sees nothing to heal
                assert normalised(live, rules) == normalised(desired, rules), (
                    app["metadata"]["name"], desired["kind"])


@pytest.mark.skipif(JQ is None, reason="needs jq")
def test_a_change_from_git_is_still_a_difference(
        rendered: dict[str, list[dict[str, Any]]]) -> None:
    """The rules ignore Kueue's fields and nothing more: a new image in Git still shows."""
    [app, *_] = applications.generated_applications(REPO)
    rules = app["spec"]["ignoreDifferences"]
    for desired in runtime_objects(rendered):
        for live in kueue_states(desired):
            changed = copy.deepcopy(desired)
            for pod in pod_specs(changed):
                pod["containers"][0]["image"] += "-new"
            assert normalised(live, rules) != normalised(changed, rules), desired["kind"]
