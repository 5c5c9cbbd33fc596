"""`tfgen import` of a JobSet that tfgen itself rendered: `experiments/mnist-jobset.yaml` (and a
variant of it: no chief, every worker to succeed, ExitCode restarts, an evaluator, a suspended
run) rendered by the real helm, imported, validated, rendered again: the same objects, every one
of them. What the runtime writes (the task index, TF_CONFIG, the task port, each task's
Service) is left out quietly; a JobSet of another shape is refused in one line at its line;
the Kueue labels of a TFJob become its spec's queue and priority too.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import FIXTURES, REPO_ROOT, copy_repo_parts, node_paths, template
from tfgen.cli import main
from tfgen.repo import layout

OWNER = "vision-team@example.com"
BASE = yaml.safe_load((REPO_ROOT / "experiments" / "mnist-jobset.yaml").read_text())
# Only the chart, schemas and tfgen.yaml: a repository without the bundled specs, so the
# imported one may take the bundled one's name and log directory.
BARE = ("charts", "schemas", "tfgen.yaml")


def _workers(spec: dict[str, Any]) -> None:
    """No chief: every worker must succeed; ExitCode restarts; an evaluator; suspended."""
    body = spec["spec"]
    del body["roles"]["chief"], body["queue"], body["priority"]  # suspend is Kueue's when queued
    body["runPolicy"] = {"successPolicy": "AllWorkers", "activeDeadlineSeconds": 7200,
                         "backoffLimit": 2, "suspend": True}
    body["roles"]["worker"].update(
        restartPolicy="ExitCode", env=[{"name": "BATCH", "value": "64"}],
        nodeSelector={"pool": "gpu"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])
    body["roles"]["evaluator"] = {"replicas": 1, "cpu": "1", "memory": "2Gi"}


VARIANTS = {"mnist-jobset": None, "jobset-workers": _workers}


def _spec(name: str) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    spec["metadata"]["name"] = name
    body = spec["spec"]
    body["args"] = [arg.replace("mnist-jobset", name) for arg in body["args"]]
    body["tensorboard"]["logDir"] = f"/training/{name}/logs"
    change = VARIANTS[name]
    if change is not None:
        change(spec)
    return spec


def _rendered(root: Path, name: str) -> str:
    """`tfgen render` in `root`, then the release of experiment `name` by the real helm."""
    result = CliRunner().invoke(main, ["render", "--root", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    values = root / layout.generated_folder(name) / layout.VALUES_FILE
    return template(root / layout.CHART_PATH, name, BASE["metadata"]["namespace"], [values])


def run_import(root: Path, *args: str | Path) -> Result:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        return CliRunner().invoke(main, ["import", *map(str, args), "--owner", OWNER],
                                  catch_exceptions=False)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each variant's spec rendered by tfgen and helm: the file of its objects."""
    out = {}
    for name in VARIANTS:
        root = copy_repo_parts(tmp_path_factory.mktemp(name) / "source", BARE)
        (root / "experiments").mkdir()
        (root / "experiments" / f"{name}.yaml").write_text(yaml.safe_dump(_spec(name)))
        out[name] = root.parent / "rendered.yaml"
        out[name].write_text(_rendered(root, name))
    return out


def _objects(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_rendered_jobset_imports_and_renders_back_to_the_same_objects(
    renders: dict[str, Path], tmp_path: Path, name: str
) -> None:
    root = copy_repo_parts(tmp_path / "repo", BARE)
    result = run_import(root, renders[name], "--write")
    assert result.exit_code == 0, result.output
    spec = yaml.safe_load((root / "experiments" / f"{name}.yaml").read_text())["spec"]
    given = _spec(name)["spec"]
    assert spec["runtime"] == "jobset"
    assert (spec.get("queue"), spec.get("priority")) == (given.get("queue"),
                                                          given.get("priority"))
    assert list(spec["roles"]) == [r for r in ("master", "chief", "worker", "ps", "evaluator")
                                   if r in given["roles"]]
    assert spec.get("runPolicy") == given["runPolicy"]
    # the runtime's own: never in the spec, never listed one by one, only counted
    listed = "\n".join(line for line in result.stderr.splitlines() if line.startswith("  "))
    for word in ("TF_CONFIG", "JOB_COMPLETION_INDEX", "tfjob-port", f"Service/{name}-worker-0",
                 "replicatedJobs[0].template.spec.completions", "successPolicy"):
        assert word not in listed, word
    assert ("not imported, what the runtime makes of the spec itself (each task's Service, "
            "TF_CONFIG, the task index, the port tfjob-port), not listed: 6 objects") in (
        result.stderr)
    validated = CliRunner().invoke(main, ["validate", str(root / "experiments")],
                                   catch_exceptions=False)
    assert validated.exit_code == 0, validated.output
    assert _objects(_rendered(root, name)) == _objects(renders[name].read_text())


# --- refused: a JobSet of another shape than tfgen's ---------------------------------------


def _jobset(renders: dict[str, Path]) -> dict[str, Any]:
    return next(d for d in _objects(renders["mnist-jobset"].read_text()) if d["kind"] == "JobSet")


def _replicated(field: str, value: Any, index: int = 1) -> Any:
    def change(jobset: dict[str, Any]) -> None:
        target = jobset["spec"]["replicatedJobs"][index]
        *parents, last = field.split(".")
        for part in parents:
            target = target[part]
        target[last] = value
    return change


REFUSED = {
    "two-copies": (_replicated("replicas", 2),
                   " spec.replicatedJobs[1].replicas: 2 copies of the Job"),
    "non-indexed": (_replicated("template.spec.completionMode", "NonIndexed"),
                    " spec.replicatedJobs[1].template.spec.completionMode: 'NonIndexed'; "
                    "TensorFlow's tasks need the index of an Indexed Job"),
    "fewer-at-once": (_replicated("template.spec.parallelism", 1),
                      " spec.replicatedJobs[1].template.spec.parallelism: 1, and completions "
                      "2; every task of a TensorFlow cluster runs at once"),
    "unknown-role": (_replicated("name", "launcher"),
                     " spec.replicatedJobs[1].name: 'launcher' names no role"),
    "second-worker": (_replicated("name", "worker", 0),
                      " spec.replicatedJobs[2].name: a second replicated job 'worker'"),
    "no-completions": (_replicated("template.spec.completions", None),
                       " spec.replicatedJobs[1].template.spec.completions: None"),
    "other-version": (lambda jobset: jobset.update(apiVersion="jobset.x-k8s.io/v1alpha1"),
                      ": apiVersion 'jobset.x-k8s.io/v1alpha1' is not a JobSet version tfgen "
                      "reads (jobset.x-k8s.io/v1alpha2)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_jobset_not_of_tfgens_shape_is_refused_at_its_line(
    renders: dict[str, Path], tmp_path: Path, case: str
) -> None:
    change, expected = REFUSED[case]
    jobset = _jobset(renders)
    change(jobset)
    source = tmp_path / "in.yaml"
    source.write_text("# a JobSet\n" + yaml.safe_dump(jobset))
    result = run_import(copy_repo_parts(tmp_path / "repo", BARE), source, "--write")
    assert result.exit_code == 1, result.output
    assert f"{source}:2:1: JobSet/mnist-jobset{expected}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "repo" / "experiments").exists()


def test_a_hand_written_jobset_says_what_is_not_tfgens(renders: dict[str, Path],
                                                       tmp_path: Path) -> None:
    """Fields the chart would write otherwise are listed, not taken: Jobs that differ in their
    run policy, a TF_CONFIG of the person's own making is still the runtime's."""
    jobset = _jobset(renders)
    jobs = jobset["spec"]["replicatedJobs"]
    jobs[2]["template"]["spec"]["backoffLimit"] = 9
    jobset["spec"]["network"]["enableDNSHostnames"] = False
    source = tmp_path / "in.yaml"
    source.write_text(yaml.safe_dump(jobset) + "---\n" + "".join(
        yaml.safe_dump(d) + "---\n" for d in _objects(renders["mnist-jobset"].read_text())
        if d["kind"] in ("PersistentVolume", "PersistentVolumeClaim")))
    result = run_import(copy_repo_parts(tmp_path / "repo", BARE), source)
    assert result.exit_code == 0, result.output
    assert "runPolicy" not in yaml.safe_load(result.stdout)["spec"]
    assert ("not imported, the spec sets runPolicy.backoffLimit once for every role, and the "
            "replicated jobs differ:") in result.stderr
    assert "spec.replicatedJobs[2].template.spec.backoffLimit: 9" in result.stderr
    assert "spec.network.enableDNSHostnames: False" in result.stderr


# --- Kueue on a TFJob ---------------------------------------------------------------------


def test_a_queued_tfjob_keeps_its_queue_and_priority(tmp_path: Path) -> None:
    tfjob = yaml.safe_load((FIXTURES / "import" / "jobs" / "v1.yaml").read_text())
    tfjob["metadata"]["namespace"] = "ml-team"
    tfjob["metadata"].setdefault("labels", {}).update({
        "kueue.x-k8s.io/queue-name": "gpu-team", "kueue.x-k8s.io/priority-class": "research"})
    tfjob["spec"]["runPolicy"]["suspend"] = True  # Kueue's, until it admits the job
    for group in tfjob["spec"]["tfReplicaSpecs"].values():
        group["template"]["spec"]["containers"][0]["image"] = "tensorflow/tensorflow:2.16.1"
    source = tmp_path / "tfjob.yaml"
    source.write_text(yaml.safe_dump(tfjob))
    result = run_import(copy_repo_parts(tmp_path / "repo", BARE), source)
    assert result.exit_code == 0, result.output
    spec = yaml.safe_load(result.stdout)["spec"]
    assert (spec["runtime"], spec["queue"], spec["priority"]) == ("tfjob", "gpu-team",
                                                                  "research")
    assert "suspend" not in spec["runPolicy"]
    assert "suspend is Kueue's for a job in queue gpu-team" in result.stderr
    assert "kueue.x-k8s.io" not in result.stderr



def _read_here(parts: tuple[Any, ...]) -> bool:
    """Whether `jobsets` reads the node at `parts` of a JobSet (not the TFJob mapping)."""
    if parts[:1] == ("metadata",) or parts[6:7] == ("metadata",):
        return False
    pod = parts[7:]  # below spec.replicatedJobs[i].template.spec.template.spec
    return not pod or pod[0] == "restartPolicy" or pod[0] == "containers" and (
        len(pod) <= 2 or pod[2] in ("name", "env", "ports"))


def test_any_node_of_a_jobset_of_another_type_gets_a_line_not_a_traceback(
    renders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every node of the JobSet that `jobsets` reads replaced by one of another type (a number
    for a mapping or list, a list for a scalar): the library raises tfgen's errors only, never
    another. (The pod spec's other fields are the TFJob mapping's, tried in test_import.py.)"""
    from tfgen.errors import TfgenError
    from tfgen.importer import import_manifests

    monkeypatch.chdir(tmp_path)
    jobset = _jobset(renders)
    source = tmp_path / "in.yaml"
    tried = 0
    for parts in filter(_read_here, node_paths(jobset)):
        changed = copy.deepcopy(jobset)
        target = changed
        for part in parts[:-1]:
            target = target[part]
        target[parts[-1]] = 7 if isinstance(target[parts[-1]], (dict, list)) else ["x"]
        source.write_text(yaml.safe_dump(changed))
        with contextlib.suppress(TfgenError):
            import_manifests([source], owner=OWNER)
        tried += 1
    assert tried > 100
