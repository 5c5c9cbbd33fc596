"""Sweeps end to end: the bundled 3 x 2 grid (experiments/lr-sweep.yaml) rendered by the real
helm 4 and helm 3 into six TFJobs and one TensorBoard, validated strictly; every command on a
sweep (explain, run-local, check --base, diff); the run suffixes; and, by hypothesis, any
parameter value either refused with one line or reaching the container literally."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts, examples, git, git_init
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.gate.documents.manifests import ManifestValidator, parse_manifest
from tfgen.gate.helm.command import find_helm
from tfgen.gate.objects import policy
from tfgen.render.generated import dump_yaml
from tfgen.repo import naming, resources
from tfgen.run import explain
from tfgen.validate import validate_paths, validate_repo
from tfgen.validate.config.load import load_config
from tfgen.validate.experiment import sweep
from tfgen.validate.experiments import check_file
from tfgen.validate.rules.sweep import sweep_problems
from tfgen.validate.rules.values import build_values

SWEEP = REPO_ROOT / "experiments" / "lr-sweep.yaml"
CHART = REPO_ROOT / "charts" / "tfjob-experiment"
LRS, BATCHES = ["0.1", "0.01", "0.001"], ["64", "128"]


def _values(path: Path = SWEEP) -> dict[str, Any]:
    result = validate_repo([path])
    assert not result.problems, result.problems
    return build_values(result.experiments[0].data)


def _template(values: dict[str, Any], tmp_path: Path, helm: str) -> str:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(dump_yaml(values), encoding="utf-8")
    name, namespace = values["experiment"]["name"], values["experiment"]["namespace"]
    return subprocess.run(
        [helm, "template", name, str(CHART), "--namespace", namespace, "-f", str(values_file)],
        capture_output=True, text=True, check=True,
    ).stdout


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    values, tmp = _values(), tmp_path_factory.mktemp("sweep")
    return {
        "v4": _template(values, tmp, str(REPO_ROOT / ".tools/helm/v4/helm")),
        "v3": _template(values, tmp, str(REPO_ROOT / ".tools/helm/v3/helm")),
    }


def test_grid_renders_six_tfjobs_with_exactly_their_values(rendered: dict[str, str]) -> None:
    assert rendered["v4"] == rendered["v3"]  # byte-identical under Helm 4 and Helm 3.19
    objects = [o.doc for o in parse_manifest(rendered["v4"])]
    tfjobs = [o for o in objects if o["kind"] == "TFJob"]
    assert len(tfjobs) == 6
    seen: set[tuple[str, str]] = set()
    log_dirs: set[str] = set()
    for tfjob in tfjobs:
        for replica in tfjob["spec"]["tfReplicaSpecs"].values():
            [container] = replica["template"]["spec"]["containers"]
            args = container["args"]
            lr = [a.split("=", 1)[1] for a in args if a.startswith("--learning_rate=")]
            batch = [a.split("=", 1)[1] for a in args if a.startswith("--batch_size=")]
            [log_dir] = [a.split("=", 1)[1] for a in args if a.startswith("--log_dir=")]
            assert len(lr) == len(batch) == 1 and not any("((" in a for a in args)
            suffix = f"{lr[0].replace('.', 'p')}-{batch[0]}"
            assert tfjob["metadata"]["name"] == f"lr-sweep-{suffix}"
            assert log_dir == f"/training/tensorflow/lr-sweep/{suffix}"
            assert container["env"] == [{"name": "RUN_NAME", "value": f"lr-sweep-{suffix}"}]
            seen.add((lr[0], batch[0]))
            log_dirs.add(log_dir)
    assert seen == {(lr, batch) for lr in LRS for batch in BATCHES}
    assert len(log_dirs) == 6
    [board] = [o for o in objects if o["kind"] == "Deployment"]
    args = board["spec"]["template"]["spec"]["containers"][0]["args"]
    spec = args[args.index("--logdir_spec") + 1]
    assert "--logdir" not in args
    assert sorted(spec.split(",")) == sorted(f"{d.rsplit('/', 1)[1]}:{d}" for d in log_dirs)
    # one volume, one claim, one TensorBoard for the whole sweep; one NetworkPolicy per run
    kinds = [o["kind"] for o in objects]
    assert kinds.count("PersistentVolume") == kinds.count("PersistentVolumeClaim") == 1
    assert kinds.count("NetworkPolicy") == 7


def test_every_rendered_object_is_strictly_valid(rendered: dict[str, str]) -> None:
    validator = ManifestValidator("1.30", resources.schema_dir())
    objects = parse_manifest(rendered["v4"])
    problems = [p for o in objects for p in validator.problems(o, "")]
    problems += [p for o in objects for p in policy.job_problems(o, "", "")]
    problems += policy.data_safety_problems(objects, "")
    jobs = [naming.job_name("lr-sweep", r.suffix) for r in sweep.runs(_values_spec())]
    problems += policy.run_job_problems(objects, jobs, "TFJob", "")
    assert problems == []
    assert policy.run_job_problems(objects, jobs[:5], "TFJob", "")  # a run too many is caught
    assert policy.run_job_problems(objects[:3], jobs, "TFJob", "")  # and a missing one


def _values_spec() -> dict[str, Any]:
    return validate_repo([SWEEP]).experiments[0].spec


def test_a_spec_without_sweep_has_no_runs_in_its_values() -> None:
    values = _values(REPO_ROOT / "experiments" / "distributed-mnist.yaml")
    assert "runs" not in values  # so its values and objects stay byte for byte as before


def test_explain_gives_every_run_s_pods_and_tf_config() -> None:
    explained = explain.explain_runs(SWEEP)
    assert len(explained) == 6
    for item in explained:
        assert item.run.startswith("lr=") and item.job.startswith("lr-sweep-")
        assert len(item.pods) == 3
        for pod in item.pods:
            assert pod.name.startswith(item.job + "-")
            config = json.loads(pod.tf_config or "null")
            addresses = [a for role in config["cluster"].values() for a in role]
            assert addresses and all(a.startswith(item.job + "-") for a in addresses)
        assert item.log_dir == f"/training/tensorflow/lr-sweep/{item.job[len('lr-sweep-'):]}"


def test_explain_and_run_local_choose_a_run(runner: CliRunner) -> None:
    out = runner.invoke(main, ["explain", str(SWEEP), "--run", "0p01-128", "--format", "json"],
                        catch_exceptions=False)
    assert out.exit_code == 0, out.output
    [run] = json.loads(out.output)
    assert run["job"] == "lr-sweep-0p01-128" and run["run"] == "lr=0.01, batch=128"
    out = runner.invoke(main, ["explain", str(SWEEP), "--run", "0p5-64"],
                        catch_exceptions=False)
    assert out.exit_code == 2 and "no such run; the sweep's runs are 0p1-64, 0p1-128" in out.output
    out = runner.invoke(main, ["run-local", str(SWEEP)], catch_exceptions=False)
    assert out.exit_code == 2
    assert "this sweep has 6 runs: choose one with --run SUFFIX (0p1-64, 0p1-128" in out.output
    mnist = REPO_ROOT / "experiments" / "distributed-mnist.yaml"
    out = runner.invoke(main, ["explain", str(mnist), "--run", "r0"], catch_exceptions=False)
    assert out.exit_code == 2 and "this experiment has no sweep" in out.output


def _spec(**sweep_block: Any) -> dict[str, Any]:
    return {"sweep": sweep_block}


def test_suffixes_come_from_the_values_and_survive_added_values() -> None:
    grid = sweep.runs(_spec(parameters={"lr": [0.1, 0.01], "batch": [64, 128]}))
    assert [r.suffix for r in grid] == ["0p1-64", "0p1-128", "0p01-64", "0p01-128"]
    wider = sweep.runs(_spec(parameters={"lr": [0.1, 0.01], "batch": [32, 64, 128]}))
    assert {r.suffix for r in grid} < {r.suffix for r in wider}  # existing runs keep names
    zipped = sweep.runs(_spec(parameters={"opt": ["Adam", "sgd"], "lr": [1, 2]}, combine="zip"))
    assert [(r.suffix, r.label()) for r in zipped] == [("r0", "opt=Adam, lr=1"),
                                                        ("r1", "opt=sgd, lr=2")]
    # a value-derived suffix that would be the claim's or TensorBoard's name is not used
    assert [r.suffix for r in sweep.runs(_spec(parameters={"x": ["data", "a"]}))] == ["r0", "r1"]
    assert [r.suffix for r in sweep.runs({})] == [""]  # no sweep: one run, the plain name


def test_max_runs_comes_from_tfgen_yaml(tmp_path: Path) -> None:
    repo = copy_repo_parts(tmp_path / "repo", ("schemas", "experiments", "tfgen.yaml"))
    config = repo / "tfgen.yaml"
    config.write_text(config.read_text() + "sweep:\n  maxRuns: 4\n")
    result = validate_paths([repo / "experiments" / "lr-sweep.yaml"], load_config([repo]))
    [problem] = result.problems
    assert (problem.line, problem.pointer) == (20, "$.spec.sweep")
    assert problem.message == "the sweep makes 6 runs, more than the limit of 4"
    assert "raise sweep.maxRuns in tfgen.yaml" in problem.hint


def test_gpus_count_every_run() -> None:
    from tfgen.validate.policy.team import gpus

    assert gpus(_values_spec()) == 6 * 2  # six runs of two 1-GPU workers


def _edit_sweep(repo: Path, change: Any) -> None:
    path = repo / "experiments" / "lr-sweep.yaml"
    text = path.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    data = yaml.safe_load(text)
    change(data["spec"])
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))
    from tfgen.render import apply_plan, plan_repository

    plan, problems = plan_repository(repo)
    assert plan is not None and not problems and not plan.problems, problems
    apply_plan(plan, prune=True)


def test_check_base_allows_new_runs_and_refuses_changed_ones(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(repo)
    git_init(repo)
    _edit_sweep(repo, lambda s: s["sweep"]["parameters"]["batch"].append(256))
    out = runner.invoke(main, ["check", "--root", str(repo), "--base", "HEAD"],
                        catch_exceptions=False)
    assert out.exit_code == 0, out.output  # three runs more: new TFJobs, the six untouched
    diff = runner.invoke(main, ["diff", "--root", str(repo), "--base", "HEAD", "--full"],
                         catch_exceptions=False)
    assert diff.exit_code == 0
    for suffix in ("0p1-256", "0p01-256", "0p001-256"):
        assert f"TFJob/lr-sweep-{suffix}" in diff.output
    git(repo, "commit", "-qam", "three more runs")
    # the shared template changes every live run: refused like any live run's change
    _edit_sweep(repo, lambda s: s["args"].append("--epochs=5"))
    out = runner.invoke(main, ["check", "--root", str(repo), "--base", "HEAD"],
                        catch_exceptions=False)
    assert out.exit_code == 1, out.output
    assert "TFJob/lr-sweep-0p1-64" in out.output and "TFJob/lr-sweep-0p001-256" in out.output


# Any text a parameter may hold: printable, control characters, YAML and template syntax.
VALUES = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40
) | st.sampled_from(["{{ .Values.image }}", "$(HOME)", "${x}", "((lr))", "'\"", "- a: b",
                     "yes", "0x1F", "1e3", "~", "null", "{{", "a,b:c", "%(lr)s"])


@settings(max_examples=examples(30), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=VALUES)
def test_any_value_is_refused_in_one_line_or_rendered_literally(
    value: str, tmp_path: Path
) -> None:
    spec_text = SWEEP.read_text().replace("batch: [64, 128]", f"batch: [{json.dumps(value)}]")
    repo = tmp_path / "repo"
    if not repo.exists():
        copy_repo_parts(repo, ("schemas", "experiments", "tfgen.yaml"))
    path = repo / "experiments" / "lr-sweep.yaml"
    path.write_text(spec_text, encoding="utf-8")
    result = validate_paths([path], load_config([repo]))
    if result.problems:
        assert all("\n" not in p.text() for p in result.problems), result.problems
        return
    objects = [o.doc for o in parse_manifest(
        _template(build_values(result.experiments[0].data), tmp_path, find_helm()))]
    tfjobs = [o for o in objects if o["kind"] == "TFJob"]
    assert len(tfjobs) == 3
    for tfjob in tfjobs:
        [container] = tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
        assert f"--batch_size={value}" in container["args"]


# Text around a placeholder. The check that a spec without sweep holds no `((` at all must see
# what the file means, not how it is written: the file is also written with every parenthesis
# as a JSON escape (`\u0028`).
_AROUND = st.lists(st.sampled_from(["((lr))", "(( lr ))", "((", "))", "(", ")", "lr", " ",
                                    "$((x))", "\\", "x"]), max_size=5).map("".join)


@settings(max_examples=examples(150), deadline=None, derandomize=True)
@given(arg=_AROUND, image_tail=_AROUND, escaped=st.booleans())
def test_a_spec_without_sweep_is_refused_a_placeholder_wherever_it_is(
    arg: str, image_tail: str, escaped: bool
) -> None:
    mnist = REPO_ROOT / "experiments" / "distributed-mnist.yaml"
    data = yaml.safe_load(mnist.read_text(encoding="utf-8"))
    data["spec"]["args"] = [*data["spec"].get("args", []), arg]
    data["spec"]["image"] += image_tail
    text = json.dumps(data)
    raw = (text.replace("(", "\\u0028") if escaped else text).encode()
    checked, _ = check_file(mnist, "experiments/distributed-mnist.yaml", raw,
                            load_config([REPO_ROOT]))
    assert checked is not None
    said = [p.message for p in sweep_problems(checked, 16)]
    assert bool(sweep.PLACEHOLDER.search(arg)) == any(
        "but the spec has no sweep" in m for m in said), said
    assert bool(sweep.PLACEHOLDER.search(image_tail)) == any(
        "in a field that takes none" in m for m in said), said
