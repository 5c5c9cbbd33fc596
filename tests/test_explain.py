"""`tfgen explain`: a spec through validation, values and the real helm to pods and TF_CONFIG.

The expected TF_CONFIG strings are written by hand from the operator's rules
(training-operator v1.9.0 pkg/controller.v1/tensorflow/tensorflow.go): compact JSON, fields
cluster, task, environment; cluster keys sorted; evaluator included; no TF_CONFIG for a job
with one replica. One helm run per scenario (module-scoped fixtures).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT
from tfgen.cli import main
from tfgen.errors import InputError
from tfgen.repo.runtimes.tfconfig import go_json
from tfgen.run import explain, formats
from tfgen.run.explain import Explanation

ROOT = Path(__file__).resolve().parents[1]
WALKTHROUGH = ROOT / "experiments" / "distributed-mnist.yaml"

CHIEF_EVAL = """\
apiVersion: tfgen.io/v1
kind: Experiment
metadata: {name: chief-eval, namespace: default, owner: someone@example.com}
spec:
  image: example.com/train:1
  command: [python, /app/main.py]
  roles:
    chief: {replicas: 1, gpus: 1}
    worker: {replicas: 2, gpus: 2, gpuResource: amd.com/gpu}
    evaluator: {replicas: 1}
  storage: {existingClaim: shared, mountPath: /data}
  tensorboard: {enabled: false}
"""

SINGLE = """\
apiVersion: tfgen.io/v1
kind: Experiment
metadata: {name: solo, namespace: default, owner: someone@example.com}
spec:
  image: example.com/train:1
  roles:
    worker: {replicas: 1}
  storage: {existingClaim: shared, mountPath: /data}
  tensorboard: {enabled: false}
"""


@pytest.fixture(scope="module")
def walkthrough() -> explain.Explanation:
    return explain.explain_spec(WALKTHROUGH)


@pytest.fixture(scope="module")
def chief_eval(tmp_path_factory: pytest.TempPathFactory) -> explain.Explanation:
    path = tmp_path_factory.mktemp("specs") / "chief-eval.yaml"
    path.write_text(CHIEF_EVAL)
    return explain.explain_spec(path)


def dense(cluster: str, task_type: str, index: int) -> str:
    task = f'{{"type":"{task_type}","index":{index}}}'
    return f'{{"cluster":{cluster},"task":{task},"environment":"cloud"}}'


def test_walkthrough_has_five_pods_with_the_operators_tf_config(
    walkthrough: explain.Explanation,
) -> None:
    pods = {p.name: p for p in walkthrough.pods}
    assert list(pods) == [
        "distributed-mnist-master-0",
        "distributed-mnist-worker-0",
        "distributed-mnist-worker-1",
        "distributed-mnist-ps-0",
        "distributed-mnist-ps-1",
    ]
    cluster = (
        '{"master":["distributed-mnist-master-0.default.svc:2222"],'
        '"ps":["distributed-mnist-ps-0.default.svc:2222","distributed-mnist-ps-1.default.svc:2222"],'
        '"worker":["distributed-mnist-worker-0.default.svc:2222",'
        '"distributed-mnist-worker-1.default.svc:2222"]}'
    )
    assert pods["distributed-mnist-master-0"].tf_config == dense(cluster, "master", 0)
    assert pods["distributed-mnist-worker-1"].tf_config == dense(cluster, "worker", 1)
    assert pods["distributed-mnist-ps-0"].tf_config == dense(cluster, "ps", 0)
    assert [p.gpus for p in walkthrough.pods] == [1, 1, 1, 0, 0]
    assert walkthrough.claim == "distributed-mnist-data"
    assert walkthrough.mount_path == "/training"
    assert walkthrough.log_dir == "/training/tensorflow/logs"


def test_walkthrough_formats(walkthrough: explain.Explanation) -> None:
    text = formats.format_explanation(walkthrough, "text")
    assert "distributed-mnist-ps-1      PS      1      distributed-mnist-ps-1.default.svc:2222" in (
        text
    )
    assert '"task": {"type": "ps", "index": 1}' in text
    assert "read `master` as `chief`" in text
    data = json.loads(formats.format_explanation(walkthrough, "json"))
    assert (data["job"], data["namespace"]) == ("distributed-mnist", "default")
    assert len(data["pods"]) == 5
    assert set(data["pods"][0]) == {"name", "pod", "replicaType", "index", "address", "gpus",
                                    "task"}
    # each pod's exact TF_CONFIG, from the cluster written once and the pod's task
    for pod, shown in zip(walkthrough.pods, data["pods"], strict=True):
        recovered = go_json({"cluster": data["cluster"], "task": shown["task"],
                             "environment": "cloud"})
        assert recovered == pod.tf_config
    mermaid = formats.format_explanation(walkthrough, "mermaid")
    assert mermaid.startswith("flowchart LR")
    assert "pvc --> pv --> nas" in mermaid
    assert "tb -. read-only .-> pvc" in mermaid


def test_chief_and_evaluator(chief_eval: explain.Explanation) -> None:
    cluster = (
        '{"chief":["chief-eval-chief-0.default.svc:2222"],'
        '"evaluator":["chief-eval-evaluator-0.default.svc:2222"],'
        '"worker":["chief-eval-worker-0.default.svc:2222","chief-eval-worker-1.default.svc:2222"]}'
    )
    pods = {p.name: p for p in chief_eval.pods}
    assert pods["chief-eval-evaluator-0"].tf_config == dense(cluster, "evaluator", 0)
    assert pods["chief-eval-chief-0"].tf_config == dense(cluster, "chief", 0)
    assert [p.gpus for p in chief_eval.pods] == [1, 2, 2, 0]
    assert chief_eval.claim == "shared"
    text = formats.format_explanation(chief_eval, "text")
    assert "TensorBoard: off" in text
    assert "Notes for the training program" not in text  # no master, no PS


def test_single_replica_has_no_tf_config(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "solo.yaml"
    path.write_text(SINGLE)
    result = runner.invoke(main, ["explain", str(path), "--format", "json"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["pods"] == [
        {
            "name": "solo-worker-0",
            "pod": "solo-worker-0",  # the training operator names pod and Service alike
            "replicaType": "Worker",
            "index": 0,
            "address": "solo-worker-0.default.svc:2222",
            "gpus": 0,
            "task": None,
        }
    ]
    assert data["cluster"] is None


def test_invalid_spec_is_reported_not_explained(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(SINGLE.replace("replicas: 1", "replicas: -1"))
    with pytest.raises(InputError, match="problem"):
        explain.explain_spec(path)
    result = runner.invoke(main, ["explain", str(path)], catch_exceptions=False)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "$.spec.roles.worker.replicas: must be at least 1, not -1" in result.output


def test_readme_shows_the_real_output(walkthrough: explain.Explanation) -> None:
    readme = (ROOT / "docs" / "running-experiments.md").read_text(encoding="utf-8")
    block = readme.split("$ tfgen explain experiments/distributed-mnist.yaml\n", 1)[1]
    block = block.split("```", 1)[0]
    real = formats.format_explanation(walkthrough, "text").splitlines()
    shown = [line for line in block.splitlines() if line and line != "..."]
    assert len(shown) > 10
    assert [line for line in shown if line not in real] == []


@pytest.mark.parametrize(
    "scenario, present, absent",
    [
        ("tensorboard-ingress", ['ing{{"Ingress tb.example.com"}} --> tbsvc'], []),
        ("existing-claim", ['pvc[("PVC team-datasets<br/>/training")]'], ["pv[", "nas["]),
    ],
)
def test_mermaid_from_chart_scenarios(scenario: str, present: list[str], absent: list[str]) -> None:
    chart = ROOT / "charts" / "tfjob-experiment"
    values = yaml.safe_load((chart / "ci" / f"{scenario}-values.yaml").read_text())
    mermaid = formats.as_mermaid(explain.explain_values(values, chart=chart))
    lines = [line.strip() for line in mermaid.splitlines()]
    assert [line for line in present if line not in lines] == []
    assert [part for part in absent if part in mermaid] == []


def test_repo_cluster_domain_reaches_the_addresses(tmp_path: Path) -> None:
    (tmp_path / "tfgen.yaml").write_text(
        "apiVersion: tfgen.io/v1\nkind: RepoConfig\nclusterDomain: cluster.local\n"
    )
    (tmp_path / "experiments").mkdir()
    spec = tmp_path / "experiments" / "chief-eval.yaml"
    spec.write_text(CHIEF_EVAL)
    explained = explain.explain_spec(spec)  # no charts/ here: the bundled chart is used
    assert explained.pods[1].address == "chief-eval-worker-0.default.svc.cluster.local:2222"
    assert '"chief-eval-evaluator-0.default.svc.cluster.local:2222"' in (
        explained.pods[0].tf_config or ""
    )


# --- an experiment by name or by path (repo.layout.experiment_path) -------------------------


@pytest.mark.parametrize("where", ["root", "sub-folder"])
def test_a_name_is_the_spec_in_experiments(runner: CliRunner, tmp_path: Path, where: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    (repo / "experiments").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "tfgen.yaml").write_text("apiVersion: tfgen.io/v1\nkind: RepoConfig\n")
    (repo / "experiments" / "solo.yaml").write_text(SINGLE)
    monkeypatch.chdir(repo if where == "root" else repo / "docs")
    by_name = runner.invoke(main, ["explain", "solo", "--format", "json"],
                            catch_exceptions=False)
    assert by_name.exit_code == 0, by_name.output
    by_path = runner.invoke(main, ["explain", str(repo / "experiments" / "solo.yaml"),
                                   "--format", "json"], catch_exceptions=False)
    assert by_path.exit_code == 0, by_path.output
    assert json.loads(by_name.output) == json.loads(by_path.output)
    assert json.loads(by_name.output)["pods"][0]["name"] == "solo-worker-0"


@pytest.mark.parametrize(("inside", "message"), [
    (True, "error: nope: no such file, and no experiment of that name in experiments/ (give a "
           "spec file or the name of an experiments/<name>.yaml)"),
    (False, "error: nope: no such file, and no experiment of that name (not inside a tfgen "
            "repository: no tfgen.yaml here or above) (give a spec file or the name of an "
            "experiments/<name>.yaml)"),
])
def test_an_unknown_name_is_a_usage_error(runner: CliRunner, tmp_path: Path, inside: bool,
                                          message: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if inside:
        (tmp_path / "tfgen.yaml").write_text("apiVersion: tfgen.io/v1\nkind: RepoConfig\n")
        (tmp_path / "experiments").mkdir()
    monkeypatch.chdir(tmp_path)
    for command in ("explain", "run-local"):
        result = runner.invoke(main, [command, "nope"], catch_exceptions=False)
        assert result.exit_code == 2
        assert result.output.splitlines() == [message]


def test_json_grows_linearly_with_the_pods(runner: CliRunner, tmp_path: Path) -> None:
    """2,001 pods: the cluster is written once, not once per pod (which printed 224 MB), and
    every pod's exact TF_CONFIG is still there to recover."""
    roles = {"chief": {"replicas": 1}, "worker": {"replicas": 1000}, "ps": {"replicas": 1000}}
    data = yaml.safe_load(SINGLE)
    data["spec"]["roles"] = roles
    path = tmp_path / "solo.yaml"
    path.write_text(yaml.safe_dump(data))
    result = runner.invoke(main, ["explain", str(path), "--format", "json"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(result.stdout.encode()) < 5_000_000
    shown = json.loads(result.stdout)
    assert len(shown["pods"]) == 2001 and len(shown["cluster"]["worker"]) == 1000
    last = shown["pods"][-1]
    exact = go_json({"cluster": shown["cluster"], "task": last["task"], "environment": "cloud"})
    assert json.loads(exact)["task"] == {"type": last["replicaType"].lower(), "index": 999}


def test_jobset_pods_are_named_as_the_cluster_names_them(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Job controller names a JobSet's pods `<run>-<role>-0-<index>-<random>`; explain
    shows them so, and each pod's headless Service (its TF_CONFIG address) apart."""
    monkeypatch.chdir(REPO_ROOT)
    result = runner.invoke(main, ["explain", "mnist-jobset"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("POD"))
    assert lines[header].split() == ["POD", "SERVICE", "TYPE", "INDEX", "ADDRESS", "GPUS"]
    assert lines[header + 2].split()[:3] == [
        "mnist-jobset-worker-0-0-xxxxx", "mnist-jobset-worker-0", "Worker"]
    assert '\n  mnist-jobset-worker-0-1-xxxxx  "task": ' in result.stdout  # its TF_CONFIG
    data = json.loads(runner.invoke(main, ["explain", "mnist-jobset", "--format", "json"]).stdout)
    assert [(p["pod"], p["name"]) for p in data["pods"]][1] == (
        "mnist-jobset-worker-0-0-xxxxx", "mnist-jobset-worker-0")


def test_text_prints_the_cluster_once_whatever_the_pods() -> None:
    """Text explain of 2,001 pods is linear in the pods (the cluster once, then each pod's
    task), not quadratic (688 MB when every pod's cluster was printed), and each pod's
    TF_CONFIG is still there to read: the shared one with the pod's own task."""
    from tfgen.repo.runtimes import tfconfig

    def job(workers: int) -> dict[str, object]:
        role = {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}}}
        return {"metadata": {"name": "big", "namespace": "team"}, "spec": {"tfReplicaSpecs": {
            "Chief": {**role, "replicas": 1}, "Worker": {**role, "replicas": workers},
            "PS": {**role, "replicas": workers}}}}

    def explained(tfjob: dict[str, Any]) -> tuple[Explanation, list[tfconfig.Pod]]:
        pods = tfconfig.pods(tfjob)
        return Explanation(job="big", namespace="team", pods=pods, tfjob=tfjob), pods

    explanation, pods = explained(job(1000))
    text = "\n".join(formats._tf_configs_text(explanation, pods))
    cluster = json.loads(pods[0].tf_config or "")["cluster"]
    assert all(text.count(f'"{address}"') == 1 for group in cluster.values()
               for address in group)
    assert len(text) < len(pods[0].tf_config or "") * 2 + 100 * len(pods)
    # each pod's TF_CONFIG: the cluster shown with the task on the pod's line
    lines = text.splitlines()
    start = lines.index("and each pod's own task:")
    tasks = {line.split()[0]: json.loads(line.split('"task": ', 1)[1])
             for line in lines[start + 1:]}
    for pod in pods:
        assert go_json({"cluster": cluster, "task": tasks[pod.name], "environment": "cloud"}
                       ) == pod.tf_config
    # the dynamic-worker form, where each pod sees another cluster, is printed whole
    dynamic = job(2)
    dynamic["spec"]["enableDynamicWorker"] = True  # type: ignore[index]
    shown = "\n".join(formats._tf_configs_text(*explained(dynamic)))
    assert "and each pod's own task:" not in shown and shown.count('"cluster"') == 5
