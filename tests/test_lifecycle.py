"""An experiment's life in Git through the CLI, in copies of this repository: `tfgen new`
(from options and `--from`), `rerun`, `list`, `retire` and `retire --delete`; log directories
that collide; `check --base` refusing to make a retired run active again (real Git); and a
retired experiment rendered by the real helm 4 and 3 to exactly its volume and claim.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import copy_repo_parts, examples, git, git_init
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.lifecycle.edit import TextEdit, compose, find, renamer
from tfgen.repo import naming

MNIST = "experiments/distributed-mnist.yaml"
HELMS = {"helm4": "TFGEN_HELM", "helm3": "TFGEN_HELM3"}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def tfgen(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(main, list(args), catch_exceptions=False)


def spec(root: Path, name: str) -> dict:
    return yaml.safe_load((root / "experiments" / f"{name}.yaml").read_text())


# --- tfgen new ---------------------------------------------------------------------------------


def test_new_writes_a_valid_spec_with_the_modeline_and_says_what_next(
        runner: CliRunner, repo: Path) -> None:
    out = tfgen(runner, "new", "fresh-run", "--owner", "me@example.com", "--image",
                "tensorflow/tensorflow:2.16.1", "--workers", "3", "--ps", "2", "--gpus", "1")
    assert out.exit_code == 0, out.output
    assert out.stdout == "experiments/fresh-run.yaml\n"
    assert "next: edit experiments/fresh-run.yaml" in out.stderr
    assert "`tfgen render`" in out.stderr and "pull request" in out.stderr
    text = (repo / "experiments/fresh-run.yaml").read_text()
    assert text.startswith("# yaml-language-server: $schema=../schemas/experiment.schema.json\n")
    data = spec(repo, "fresh-run")
    assert data["metadata"] == {"name": "fresh-run", "namespace": "default",
                                "owner": "me@example.com"}  # namespace: tfgen.yaml's default
    assert data["spec"]["roles"] == {"chief": {"replicas": 1},  # beside ps: coordinates only
                                     "worker": {"replicas": 3, "gpus": 1},
                                     "ps": {"replicas": 2}}
    assert data["spec"]["tensorboard"]["logDir"] == "/training/fresh-run/logs"
    assert tfgen(runner, "validate").exit_code == 0


def test_new_takes_the_owner_from_git(runner: CliRunner, repo: Path) -> None:
    git_init(repo)
    git(repo, "config", "user.email", "from-git@example.com")
    out = tfgen(runner, "new", "owned", "--image", "tensorflow/tensorflow:2.16.1")
    assert out.exit_code == 0, out.output
    assert spec(repo, "owned")["metadata"]["owner"] == "from-git@example.com"


@pytest.mark.parametrize("name", ["Bad_Name", "x-", "a" * (naming.MAX_NAME_LENGTH + 1),
                                  naming.APPLICATIONSET_NAME])
def test_new_refuses_what_validate_refuses_as_a_name(
        runner: CliRunner, repo: Path, name: str) -> None:
    before = sorted(p.name for p in (repo / "experiments").glob("*.yaml"))
    out = tfgen(runner, "new", name, "--owner", "o@example.com", "--image", "x/y:1")
    assert out.exit_code == 2
    assert "experiment name" in out.stderr and "Traceback" not in out.output
    assert sorted(p.name for p in (repo / "experiments").glob("*.yaml")) == before


def test_new_never_writes_over_a_spec(runner: CliRunner, repo: Path) -> None:
    before = (repo / MNIST).read_bytes()
    out = tfgen(runner, "new", "distributed-mnist", "--owner", "o@example.com", "--image", "a:1")
    assert out.exit_code == 2 and "exists already" in out.stderr
    assert (repo / MNIST).read_bytes() == before


def test_new_from_renames_what_names_the_old_run_and_keeps_comments(
        runner: CliRunner, repo: Path) -> None:
    assert tfgen(runner, "new", "ckpt-run", "--owner", "o@example.com", "--image",
                 "tensorflow/tensorflow:2.16.1").exit_code == 0
    source = repo / "experiments/ckpt-run.yaml"
    source.write_text(source.read_text().replace(
        "  args:\n", "  # checkpoints next to the logs\n  env:\n    - name: DATA\n"
        "      value: /training/datasets/ckpt-run-data\n  args:\n"))
    out = tfgen(runner, "new", "ckpt-run-b", "--from", "ckpt-run", "--owner", "b@example.com")
    assert out.exit_code == 0, out.output
    text = (repo / "experiments/ckpt-run-b.yaml").read_text()
    assert "# checkpoints next to the logs" in text
    data = yaml.safe_load(text)
    assert data["metadata"]["name"] == "ckpt-run-b"
    assert data["metadata"]["owner"] == "b@example.com"
    assert data["spec"]["args"] == ["--log_dir=/training/ckpt-run-b/logs"]
    assert data["spec"]["tensorboard"]["logDir"] == "/training/ckpt-run-b/logs"
    # a data path that holds the old name only inside a longer name is data: kept
    assert data["spec"]["env"] == [{"name": "DATA", "value": "/training/datasets/ckpt-run-data"}]
    assert data["spec"]["image"] == "tensorflow/tensorflow:2.16.1"
    assert data["metadata"]["annotations"] == {naming.COPY_ANNOTATION: "ckpt-run"}
    # nothing else changed: the text is the old one with the renamed fields, plus the record
    # of where it came from
    old_lines = source.read_text().splitlines()
    new_lines = [line for line in text.splitlines()
                 if line != f"  annotations: {{{naming.COPY_ANNOTATION}: ckpt-run}}"]
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    assert len(changed) == 4, changed  # name, owner, args, logDir
    for field in ("$.metadata.name: ckpt-run -> ckpt-run-b", "$.spec.args[0]: ",
                  "$.spec.tensorboard.logDir: /training/ckpt-run/logs -> "
                  "/training/ckpt-run-b/logs",
                  f'$.metadata.annotations["{naming.COPY_ANNOTATION}"]: set to ckpt-run'):
        assert f"  changed {field}" in out.stderr, out.stderr


def test_new_from_refuses_a_log_directory_another_run_uses(
        runner: CliRunner, repo: Path) -> None:
    """--log-dir pointing at another active run's folder: refused on the copy, never on the
    untouched original, suggesting a folder it does not have yet."""
    out = tfgen(runner, "new", "mnist-again", "--from", "distributed-mnist",
                "--owner", "o@example.com", "--log-dir", "/training/tensorflow/logs")
    assert out.exit_code == 1
    assert not (repo / "experiments/mnist-again.yaml").exists()
    [line] = out.stdout.splitlines()
    assert line.startswith("experiments/mnist-again.yaml:")
    assert "$.spec.tensorboard.logDir" in line and "experiments/distributed-mnist.yaml" in line
    assert "restore the old run's checkpoints" in line
    assert "e.g. /training/tensorflow/logs/mnist-again," in line
    assert "nothing written" in out.stderr


# --- tfgen rerun -------------------------------------------------------------------------------


def test_rerun_notes_its_origin_and_the_chart_carries_it(runner: CliRunner, repo: Path) -> None:
    source = repo / MNIST
    source.write_text(source.read_text().replace("/training/tensorflow/logs",
                                                 "/training/distributed-mnist/logs"))
    out = tfgen(runner, "rerun", "distributed-mnist", "--as", "mnist-v2",
                "--owner", "o@example.com")
    assert out.exit_code == 0, out.output
    data = spec(repo, "mnist-v2")
    assert data["metadata"]["annotations"] == {naming.RERUN_ANNOTATION: "distributed-mnist"}
    assert data["spec"]["tensorboard"]["logDir"] == "/training/mnist-v2/logs"
    assert "--log_dir=/training/mnist-v2/logs" in data["spec"]["args"]
    assert "--data_dir=/training/tensorflow/input_data" in data["spec"]["args"]
    assert tfgen(runner, "render").exit_code == 0
    values = yaml.safe_load((repo / "argo/experiments/mnist-v2/values.yaml").read_text())
    assert values["experiment"]["rerunOf"] == "distributed-mnist"
    assert values["experiment"]["annotations"] == {}
    objects = helm_template(repo, "mnist-v2", "TFGEN_HELM")
    assert objects and all(
        o["metadata"]["annotations"][naming.RERUN_ANNOTATION] == "distributed-mnist"
        for o in objects)
    assert tfgen(runner, "check").exit_code == 0


def test_new_writes_runtime_queue_and_priority_only_when_given(
    runner: CliRunner, repo: Path
) -> None:
    made = tfgen(runner, "new", "queued", "--namespace", "ml-team", "--owner", "t@example.com",
                 "--image", "docker.io/tensorflow/tensorflow:2.16.1", "--runtime", "jobset",
                 "--queue", "gpu-team", "--priority", "research")
    assert made.exit_code == 0, made.output
    written = spec(repo, "queued")["spec"]
    assert (written["runtime"], written["queue"], written["priority"]) == (
        "jobset", "gpu-team", "research")
    assert "chief" in written["roles"]  # what a JobSet needs before Kubernetes 1.33
    plain = tfgen(runner, "new", "plain", "--owner", "t@example.com", "--image", "a:1")
    assert plain.exit_code == 0, plain.output
    assert not {"runtime", "queue", "priority"} & set(spec(repo, "plain")["spec"])
    # a copy takes them too; "" leaves the source's queue
    copied = tfgen(runner, "new", "unqueued", "--from", "mnist-jobset", "--owner",
                   "t@example.com", "--runtime", "tfjob", "--queue", "", "--priority", "")
    assert copied.exit_code == 0, copied.output
    assert "changed $.spec.runtime: jobset -> tfjob" in copied.stderr
    assert 'changed $.spec.queue: gpu-team -> ""' in copied.stderr
    copy = spec(repo, "unqueued")["spec"]
    assert (copy["runtime"], copy["queue"], copy["priority"]) == ("tfjob", "", "")
    rows = {r["name"]: r for r in json.loads(tfgen(runner, "list", "--format", "json").stdout)}
    assert (rows["queued"]["runtime"], rows["queued"]["queue"]) == ("jobset", "gpu-team")
    assert (rows["unqueued"]["runtime"], rows["unqueued"]["holds"]) == ("tfjob", 2)


@pytest.mark.parametrize("source", ["../evil", "../../etc/evil.yaml", "nowhere/x.yaml"])
def test_a_missing_source_is_named_as_given(runner: CliRunner, repo: Path, source: str) -> None:
    # never an absolute path, nor one joined to the repository, built from what was typed
    made = tfgen(runner, "rerun", source, "--as", "copy", "--owner", "t@example.com")
    assert made.exit_code == 1, made.output
    assert made.stderr.strip() == f"error: {source}: no such file"


def test_a_copy_into_another_namespace_names_the_option_when_refused(
    runner: CliRunner, repo: Path
) -> None:
    # ml-team's policy allows other registries than the walkthrough's image comes from
    made = tfgen(runner, "new", "moved", "--from", "distributed-mnist", "--namespace", "ml-team",
                 "--owner", "t@example.com")
    assert made.exit_code == 1, made.output
    assert "policy.ml-team.registries" in made.stdout
    assert ("experiments/moved.yaml would not be valid with --namespace ml-team (its policy in "
            "tfgen.yaml judges the copy) (the problems name its fields); nothing written"
            ) in made.stderr


def test_a_copy_with_a_master_says_how_to_make_it_a_chief(runner: CliRunner, repo: Path) -> None:
    made = tfgen(runner, "new", "mnist-tf2", "--from", "distributed-mnist", "--owner",
                 "t@example.com")
    assert made.exit_code == 0, made.output
    assert "master" in spec(repo, "mnist-tf2")["spec"]["roles"]  # copied as it is
    assert ("note: the copy keeps roles.master, TensorFlow 1's name for the coordinator; "
            "TensorFlow 2's tf.distribute refuses the task type master") in made.stderr
    assert "rename `master:` to `chief:` under spec.roles" in made.stderr
    chief = tfgen(runner, "new", "jobset-copy", "--from", "mnist-jobset", "--owner",
                  "t@example.com")
    assert chief.exit_code == 0 and "note:" not in chief.stderr, chief.output


def test_new_names_what_put_a_refused_runtime_there(runner: CliRunner, repo: Path) -> None:
    """A copy of a spec without a chief cannot run as a JobSet under Kubernetes 1.30: the
    refusal is at spec.runtime, of a file never written, so the message names its cause."""
    made = tfgen(runner, "new", "as-jobset", "--from", "cpu-linear", "--owner", "t@example.com",
                 "--runtime", "jobset")
    assert made.exit_code == 1, made.output
    assert "$.spec.runtime: on runtime jobset: without a chief or master" in made.stdout
    assert ("experiments/as-jobset.yaml would not be valid with --runtime jobset (the problems "
            "name its fields); nothing written") in made.stderr
    assert not (repo / "experiments" / "as-jobset.yaml").exists()
    config = repo / "tfgen.yaml"
    config.write_text(config.read_text().replace(
        "  default:\n", "  default:\n    runtime: jobset\n"))
    line = config.read_text().splitlines().index("    runtime: jobset") + 1
    made = tfgen(runner, "new", "as-jobset", "--from", "cpu-linear", "--owner", "t@example.com")
    assert made.exit_code == 1, made.output
    assert (f"would not be valid with policy.default.runtime jobset of tfgen.yaml:{line}, which "
            "--runtime overrides") in made.stderr
    assert not (repo / "experiments" / "as-jobset.yaml").exists()
    kept = tfgen(runner, "new", "as-tfjob", "--from", "cpu-linear", "--owner", "t@example.com",
                 "--runtime", "tfjob")
    assert kept.exit_code == 0, kept.output


# --- tfgen list --------------------------------------------------------------------------------


def test_list_text_is_an_aligned_table(runner: CliRunner, repo: Path) -> None:
    out = tfgen(runner, "list")
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["NAME", "NAMESPACE", "OWNER", "RUNTIME", "QUEUE", "RUNS",
                                "TOPOLOGY", "GPUS", "HOLDS", "STORAGE", "STATE"]
    specs = sorted((repo / "experiments").glob("*.yaml"))
    assert len(lines) == 1 + len(specs)
    mnist = next(x for x in lines if x.startswith("distributed-mnist"))
    assert "1 master (1 GPU), 2x1 GPU workers, 2 ps" in mnist
    assert "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com:/training" in mnist
    assert mnist.split()[-1] == "active"
    assert "3 workers, 1 ps" in next(x for x in lines if x.startswith("cpu-linear"))
    sweep = next(x for x in lines if x.startswith("lr-sweep")).split()
    assert sweep[3:5] == ["tfjob", "6"] and sweep[-3] == "12"  # six runs of 2x1 GPU workers
    column = lines[0].index("STATE")
    assert all(line[column:].split()[0] in ("STATE", "active") for line in lines)
    # the JobSet queued by Kueue holds none of the quota, as validate counts it
    queued = next(x for x in lines if x.startswith("mnist-jobset"))
    assert queued[lines[0].index("RUNTIME"):].split()[:2] == ["jobset", "gpu-team"]
    assert queued[lines[0].index("HOLDS"):].split()[0] == "0"
    assert out.stderr.splitlines() == ["namespace ml-team: 5 of 16 GPUs of its quota held",
                                       f"{len(specs)} experiments"]
    # no column of queues where nothing is queued
    unqueued = tfgen(runner, "list", "--namespace", "default").stdout.splitlines()
    assert "RUNTIME" in unqueued[0] and "QUEUE" not in unqueued[0]


def test_list_json_and_filters(runner: CliRunner, repo: Path) -> None:
    assert tfgen(runner, "retire", "cpu-linear").exit_code == 0
    rows = json.loads(tfgen(runner, "list", "--format", "json").stdout)
    assert [r["name"] for r in rows] == sorted(
        p.stem for p in (repo / "experiments").glob("*.yaml"))
    assert set(rows[0]) == {"name", "namespace", "cluster", "owner", "runtime", "queue", "runs",
                            "topology", "gpus", "holds", "storage", "state"}
    assert {r["name"]: (r["runtime"], r["queue"]) for r in rows}["mnist-jobset"] == (
        "jobset", "gpu-team")
    assert rows[0]["runtime"] == "tfjob" and rows[0]["queue"] == ""
    assert {r["name"]: r["runs"] for r in rows}["lr-sweep"] == 6
    gpus = {r["name"]: r["gpus"] for r in rows}
    assert gpus["distributed-mnist"] == 3 and gpus["resnet-chief-eval"] == 5
    assert rows[0]["storage"] == "claim shared-datasets" and rows[0]["state"] == "retired"
    only = json.loads(tfgen(runner, "list", "--format", "json", "--state", "retired").stdout)
    assert [r["name"] for r in only] == ["cpu-linear"]
    team = json.loads(tfgen(runner, "list", "--format", "json", "--namespace", "ml-team").stdout)
    assert [r["name"] for r in team] == ["mnist-jobset", "resnet-chief-eval"]
    mine = json.loads(tfgen(runner, "list", "--format", "json",
                            "--owner", "data-team@example.com").stdout)
    assert [r["name"] for r in mine] == ["cpu-linear"]


def test_list_lists_what_it_can_and_reports_problems(runner: CliRunner, repo: Path) -> None:
    path = repo / "experiments/cpu-linear.yaml"
    path.write_text(path.read_text().replace("replicas: 3", "replicas: -3"))
    out = tfgen(runner, "list")
    assert out.exit_code == 1
    assert any(x.startswith("cpu-linear") for x in out.stdout.splitlines())
    assert "experiments/cpu-linear.yaml:" in out.stdout and "replicas" in out.stdout


# --- tfgen retire ------------------------------------------------------------------------------


def test_retire_edits_the_text_and_is_idempotent(runner: CliRunner, repo: Path) -> None:
    before = (repo / MNIST).read_text()
    out = tfgen(runner, "retire", "distributed-mnist")
    assert out.exit_code == 0, out.output
    after = (repo / MNIST).read_text()
    assert after == before.replace("spec:\n", "spec:\n  lifecycle: retired\n", 1)
    again = tfgen(runner, "retire", "distributed-mnist")
    assert again.exit_code == 0 and "retired already" in again.stderr
    assert (repo / MNIST).read_text() == after
    assert tfgen(runner, "render").exit_code == 0
    assert tfgen(runner, "check").exit_code == 0
    explained = tfgen(runner, "explain", MNIST)
    assert explained.exit_code == 1 and "is retired" in explained.stderr


@pytest.mark.parametrize(("name", "kind"), [("distributed-mnist", "TFJob"),
                                            ("mnist-jobset", "JobSet")])
def test_retire_names_the_job_argo_cd_prunes(
    runner: CliRunner, repo: Path, name: str, kind: str
) -> None:
    out = tfgen(runner, "retire", name)
    assert out.exit_code == 0, out.output
    assert f"Argo CD prunes the {kind} and TensorBoard" in out.stderr


def test_retire_delete_removes_spec_and_generated_folder(runner: CliRunner, repo: Path) -> None:
    out = tfgen(runner, "retire", "resnet-chief-eval", "--delete")
    assert out.exit_code == 0, out.output
    assert not (repo / "experiments/resnet-chief-eval.yaml").exists()
    assert not (repo / "argo/experiments/resnet-chief-eval").exists()
    assert "argocd app delete resnet-chief-eval" in out.stderr
    assert "AFTER it is merged" in out.stderr and "argo/README.md" in out.stderr
    assert tfgen(runner, "render", "--check").exit_code == 0


def test_argo_readme_explains_the_removal_order() -> None:
    from helpers import REPO_ROOT
    text = (REPO_ROOT / "argo/README.md").read_text()
    assert "### Removing an experiment" in text
    assert "Delete=false" in text and "Retain" in text


def test_check_base_refuses_unretiring(runner: CliRunner, repo: Path) -> None:
    assert tfgen(runner, "retire", "cpu-linear").exit_code == 0
    assert tfgen(runner, "render").exit_code == 0
    git_init(repo)
    assert tfgen(runner, "check", "--base", "HEAD").exit_code == 0
    path = repo / "experiments/cpu-linear.yaml"
    path.write_text(path.read_text().replace("lifecycle: retired", "lifecycle: active"))
    assert tfgen(runner, "render").exit_code == 0
    out = tfgen(runner, "check", "--base", "HEAD")
    assert out.exit_code == 1
    assert "experiments/cpu-linear.yaml:10:3: $.spec.lifecycle: cpu-linear is retired at the base" \
        " revision" in out.stdout
    assert "tfgen rerun cpu-linear --as NEW" in out.stdout


# --- collisions --------------------------------------------------------------------------------


def test_two_active_experiments_may_not_share_a_log_directory(
        runner: CliRunner, repo: Path) -> None:
    copy = repo / "experiments/mnist-copy.yaml"
    copy.write_text((repo / MNIST).read_text().replace("name: distributed-mnist",
                                                       "name: mnist-copy"))
    out = tfgen(runner, "validate")
    assert out.exit_code == 1
    hits = [x for x in out.stdout.splitlines() if "mix its curves" in x]
    assert sorted(h.split(":")[0] for h in hits) == [MNIST, "experiments/mnist-copy.yaml"]
    line = (repo / MNIST).read_text().splitlines().index("    logDir: /training/tensorflow/logs")
    assert any(h.startswith(f"{MNIST}:{line + 1}:") for h in hits)
    # retired, the old run writes nothing any more
    assert tfgen(runner, "retire", "distributed-mnist").exit_code == 0
    assert tfgen(runner, "validate").exit_code == 0


def test_the_same_claim_and_folder_collide_too(runner: CliRunner, repo: Path) -> None:
    path = repo / "experiments/cpu-linear.yaml"
    text = path.read_text().replace("    enabled: false", "    logDir: /data/logs")
    path.write_text(text)
    (repo / "experiments/cpu-linear-2.yaml").write_text(
        text.replace("name: cpu-linear", "name: cpu-linear-2").replace("/data", "/mnt"))
    out = tfgen(runner, "validate")
    assert out.exit_code == 1 and "claim default/shared-datasets" in out.stdout


# --- the chart ---------------------------------------------------------------------------------


def helm_template(root: Path, name: str, env: str) -> list[dict]:
    helm = os.environ.get(env)
    if not helm:
        pytest.skip(f"{env} not set")
    out = subprocess.run(
        [helm, "template", name, str(root / "charts/tfjob-experiment"), "--namespace", "x",
         "-f", str(root / f"argo/experiments/{name}/values.yaml")],
        capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.mark.parametrize("env", HELMS.values(), ids=HELMS.keys())
def test_retired_experiment_renders_only_its_volume_and_claim(
        runner: CliRunner, repo: Path, env: str) -> None:
    for name in ("distributed-mnist", "resnet-chief-eval", "cpu-linear"):
        assert tfgen(runner, "retire", name).exit_code == 0
    path = repo / "experiments/resnet-chief-eval.yaml"
    path.write_text(path.read_text().replace("    reloadInterval: 60",
                                             "    reloadInterval: 60\n    keep: true"))
    assert tfgen(runner, "render").exit_code == 0
    kinds = sorted(o["kind"] for o in helm_template(repo, "distributed-mnist", env))
    assert kinds == ["PersistentVolume", "PersistentVolumeClaim"]
    kept = sorted(o["kind"] for o in helm_template(repo, "resnet-chief-eval", env))
    assert kept == ["Deployment", "Ingress", "NetworkPolicy", "PersistentVolume",
                    "PersistentVolumeClaim", "Service"]
    # an existing claim: no storage of the chart's; its job's policy keeps the Application
    # from being empty (Argo CD would never prune its last objects)
    assert [o["kind"] for o in helm_template(repo, "cpu-linear", env)] == ["NetworkPolicy"]
    for obj in helm_template(repo, "distributed-mnist", env):
        assert obj["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == \
            "Prune=false,Delete=false"
    assert tfgen(runner, "check").exit_code == 0


def test_a_retired_experiment_that_renders_nothing_is_refused(
        runner: CliRunner, repo: Path) -> None:
    config = repo / "tfgen.yaml"
    config.write_text(config.read_text().replace("  enabled: true                   # off only",
                                                 "  enabled: false                  # off only"))
    assert tfgen(runner, "retire", "cpu-linear").exit_code == 0
    assert tfgen(runner, "render").exit_code == 0
    out = tfgen(runner, "check")
    assert out.exit_code == 1
    assert "renders no object at all" in out.stdout and "--delete" in out.stdout


# --- text edits --------------------------------------------------------------------------------


@settings(max_examples=examples(60), deadline=None, derandomize=True)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_a_replaced_scalar_reads_back_as_the_value(value: str) -> None:
    text = "# keep me\nspec:\n  a: old  # and me\n  b: [x, old]\n"
    root = compose(text, "t.yaml")
    edit = TextEdit(text)
    from tfgen.lifecycle.edit import scalars
    for scalar in scalars(root):
        if scalar.value == "old":
            edit.replace(scalar, value)
    new = edit.apply()
    assert yaml.safe_load(new) == {"spec": {"a": value, "b": ["x", value]}}
    assert new.startswith("# keep me\n") and "# and me" in new


def test_set_in_mapping_inserts_or_replaces() -> None:
    text = "spec:\n  # roles first\n  roles: {}\nmetadata: {}\n"
    root = compose(text, "t.yaml")
    edit = TextEdit(text)
    edit.set_in_mapping(find(root, ("spec",)), "lifecycle", "retired", "t.yaml")
    edit.set_in_mapping(find(root, ("metadata",)), "name", "x", "t.yaml")
    assert edit.apply() == "spec:\n  lifecycle: retired\n  # roles first\n  roles: {}\n" \
                           "metadata: {name: x}\n"


def test_renamer_renames_whole_names_only() -> None:
    rename = renamer("mnist", "mnist-2")
    assert rename("/logs/mnist/ckpt") == "/logs/mnist-2/ckpt"
    assert rename("--dir=/x/mnist") == "--dir=/x/mnist-2"
    assert rename("/x/distributed-mnist") == "/x/distributed-mnist"
    assert rename("/x/mnist-data") == "/x/mnist-data"
