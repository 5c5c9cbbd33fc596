"""A team repository's first week, through the CLI in a repository `tfgen init` started: every
file, folder and command the CLI points at exists there (no Makefile, no examples/ of tfgen's
own), helm comes from `tfgen install-helm`, and the specs tfgen writes explain without a
warning."""

from __future__ import annotations

import json
import re
from pathlib import Path

import helpers
import pytest
import yaml
from click.testing import CliRunner
from helpers import REPO_ROOT, copy_repo_parts
from test_init import start_repository
from tfgen.cli import main
from tfgen.repo import naming

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "import"

# What reads as a pointer in a message: a repository path with a suffix, a folder, a make
# target, a tfgen command in backquotes.
PATH_WORD = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.(?:md|py|yaml|json|txt))\b")
COMMAND = re.compile(r"`tfgen ([a-z-]+)")


@pytest.fixture
def team(tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository `tfgen init` started, as the working directory."""
    repo = start_repository(tmp_path / "team", runner)
    monkeypatch.chdir(repo)
    return repo


def pointers_exist(text: str, repo: Path) -> list[str]:
    """Every pointer in `text`; fails naming those that do not exist in `repo`."""
    found = []
    kept = "\n".join(line for line in text.splitlines() if not line.startswith("removed "))
    for word in PATH_WORD.findall(kept):
        if word.startswith(("tfgen.io", "kubernetes.io")) or "@" in word:
            continue
        found.append(word)
        assert (repo / word).exists(), f"{word!r} is not in the repository: {text}"
    assert "make " not in text, text
    for command in COMMAND.findall(text):
        found.append(command)
        assert command in main.commands, f"`tfgen {command}` is no command: {text}"
    return found


def test_what_the_cli_points_at_exists_in_a_team_repository(
    team: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    # no helm anywhere: check says how to get one
    monkeypatch.delenv("TFGEN_HELM", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    checked = runner.invoke(main, ["check"], catch_exceptions=False)
    assert checked.exit_code == 2
    assert "`tfgen install-helm`" in checked.stderr
    seen += pointers_exist(checked.output, team)
    monkeypatch.undo()
    monkeypatch.chdir(team)
    new = runner.invoke(main, ["new", "first", "--image", "registry.example.com/a:1",
                               "--owner", "t@example.com"],
                        catch_exceptions=False)
    assert new.exit_code == 0, new.output
    seen += pointers_exist(new.output, team)
    for command in (["explain", "first"], ["retire", "first"], ["retire", "first", "--delete"]):
        result = runner.invoke(main, command, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        seen += pointers_exist(result.output, team)
    assert {"install-helm", "argo/README.md"} <= set(seen), seen


# --- tfgen new: a chief, GPUs only where asked ------------------------------------------------


@pytest.mark.parametrize(("flags", "roles"), [
    (["--workers", "2", "--gpus", "4", "--ps", "1"],
     {"chief": {"replicas": 1}, "worker": {"replicas": 2, "gpus": 4}, "ps": {"replicas": 1}}),
    (["--workers", "2", "--gpus", "2", "--ps", "0"],
     {"chief": {"replicas": 1, "gpus": 2}, "worker": {"replicas": 2, "gpus": 2}}),
    (["--workers", "3", "--gpus", "1", "--chief-gpus", "1"],
     {"chief": {"replicas": 1, "gpus": 1}, "worker": {"replicas": 3, "gpus": 1},
      "ps": {"replicas": 1}}),
    (["--workers", "0", "--ps", "0"], {"chief": {"replicas": 1}}),
    ([], {"chief": {"replicas": 1}, "worker": {"replicas": 2}, "ps": {"replicas": 1}}),
])
def test_new_scaffolds_a_chief_and_explain_has_nothing_to_warn(
    team: Path, runner: CliRunner, flags: list[str], roles: dict
) -> None:
    made = runner.invoke(main, ["new", "run", "--image", "registry.example.com/a:1",
                                "--owner", "t@example.com", *flags], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    data = yaml.safe_load((team / "experiments" / "run.yaml").read_text())
    assert data["spec"]["roles"] == roles
    explained = runner.invoke(main, ["explain", "run"], catch_exceptions=False)
    assert explained.exit_code == 0, explained.output
    assert "Notes for the training program" not in explained.output
    assert "master" not in explained.output


@pytest.mark.parametrize("option", ["--gpus", "--chief-gpus", "--workers", "--ps"])
def test_new_takes_exactly_the_schemas_range(
    team: Path, runner: CliRunner, option: str
) -> None:
    """Each count option's range is the schema's bound (one home): its maximum is written and
    validates, one more is a usage error."""
    schema = json.loads((team / "schemas" / "experiment.schema.json").read_text())["$defs"]
    most = (schema["role"]["properties"]["gpus"]["maximum"] if "gpus" in option
            else schema["roleMany"]["allOf"][0]["properties"]["replicas"]["maximum"])
    base = ["new", "run", "--image", "registry.example.com/a:1", "--owner", "t@example.com"]
    over = runner.invoke(main, [*base, option, str(most + 1)], catch_exceptions=False)
    assert over.exit_code == 2 and f"{most + 1}" in over.stderr
    at = runner.invoke(main, [*base, option, str(most)], catch_exceptions=False)
    assert at.exit_code in (0, 1), at.output  # 1: a namespace policy may refuse so many
    assert "is not valid" not in at.output and "maximum" not in at.output


# --- copying: new --from and rerun always give the copy its own log directory ------------------

BUNDLED = sorted(p.stem for p in (REPO_ROOT / "experiments").glob("*.yaml"))


@pytest.fixture
def bundled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo_parts(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize("source", BUNDLED)
@pytest.mark.parametrize("how", ["new", "rerun"])
def test_every_bundled_experiment_copies(
    bundled: Path, runner: CliRunner, source: str, how: str
) -> None:
    args = (["new", "the-copy", "--from", source] if how == "new"
            else ["rerun", source, "--as", "the-copy"])
    made = runner.invoke(main, [*args, "--owner", "t@example.com"], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    old = yaml.safe_load((bundled / "experiments" / f"{source}.yaml").read_text())
    new = yaml.safe_load((bundled / "experiments" / "the-copy.yaml").read_text())
    old_logs = old["spec"]["tensorboard"].get("logDir")
    if old_logs:  # its own folder, every arg that used the old one follows
        new_logs = new["spec"]["tensorboard"]["logDir"]
        assert new_logs != old_logs and "the-copy" in new_logs
        assert f"  changed $.spec.tensorboard.logDir: {old_logs} -> {new_logs}" in made.stderr
        assert not any(arg.endswith(f"={old_logs}") for arg in new["spec"].get("args", []))
    assert runner.invoke(main, ["validate"], catch_exceptions=False).exit_code == 0


def test_an_imported_experiment_copies_and_log_dir_is_the_one_asked_for(
    team: Path, runner: CliRunner
) -> None:
    manifests = team / "old.yaml"
    manifests.write_text("\n---\n".join(
        (FIXTURES / part).read_text().replace("namespace: default", "namespace: ml")
        for part in ("jobs/v1.yaml", "storage/csi.yaml")))
    imported = runner.invoke(main, ["import", str(manifests), "--owner", "t@example.com",
                                    "--name", "old-run", "--write"], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    old = yaml.safe_load((team / "experiments" / "old-run.yaml").read_text())
    old_logs = old["spec"]["tensorboard"]["logDir"]
    copied = runner.invoke(main, ["rerun", "old-run", "--as", "new-run", "--owner",
                                  "t@example.com"], catch_exceptions=False)
    assert copied.exit_code == 0, copied.output
    new = yaml.safe_load((team / "experiments" / "new-run.yaml").read_text())
    assert new["spec"]["tensorboard"]["logDir"] == f"{old_logs}/new-run"
    asked = runner.invoke(main, ["new", "third-run", "--from", "old-run", "--owner",
                                 "t@example.com", "--log-dir", "/training/third"],
                          catch_exceptions=False)
    assert asked.exit_code == 0, asked.output
    third = yaml.safe_load((team / "experiments" / "third-run.yaml").read_text())
    assert third["spec"]["tensorboard"]["logDir"] == "/training/third"
    assert third["metadata"]["annotations"] == {naming.COPY_ANNOTATION: "old-run"}
    every = [*third["spec"].get("args", []),
             *(e.get("value", "") for e in third["spec"].get("env", []))]
    for role in third["spec"]["roles"].values():
        every += [*role.get("args", []), *(e.get("value", "") for e in role.get("env", []))]
    assert not any(old_logs in value for value in every), every
    assert runner.invoke(main, ["render"], catch_exceptions=False).exit_code == 0
    assert runner.invoke(main, ["check"], catch_exceptions=False).exit_code == 0


def test_a_clash_names_the_file_being_added_and_a_folder_it_does_not_have(
    bundled: Path, runner: CliRunner
) -> None:
    copy = bundled / "experiments" / "mine.yaml"
    copy.write_text((bundled / "experiments" / "distributed-mnist.yaml").read_text()
                    .replace("name: distributed-mnist", "name: mine"))
    whole = runner.invoke(main, ["validate"], catch_exceptions=False)
    for line in whole.stdout.splitlines():  # neither is known to be new: both, each its own
        assert "/training/tensorflow/logs," not in line.split("e.g. ")[-1], line
    given = runner.invoke(main, ["validate", "experiments/mine.yaml"], catch_exceptions=False)
    [line] = given.stdout.splitlines()
    assert line.startswith("experiments/mine.yaml:")
    assert "e.g. /training/tensorflow/logs/mine," in line


# --- quota: who holds it, and retiring what has finished in one command ------------------------


def tfjob(name: str, namespace: str, state: str | None) -> dict:
    """A TFJob as `kubectl get tfjobs -o yaml` lists it, finished in `state` (None: running)."""
    conditions = [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]
    if state:
        conditions += [{"type": "Running", "status": "False"}, {"type": state, "status": "True"}]
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": namespace, "uid": "1"},
            "spec": {}, "status": {"conditions": conditions}}


def test_retire_finished_retires_every_finished_run_in_one_command(
    bundled: Path, runner: CliRunner
) -> None:
    sweep_runs = [f"lr-sweep-{s}" for s in ("0p1-64", "0p1-128", "0p01-64", "0p01-128",
                                             "0p001-64", "0p001-128")]
    jobs = [tfjob("distributed-mnist", "default", "Succeeded"),
            tfjob("cpu-linear", "default", "Failed"),
            tfjob("resnet-chief-eval", "ml-team", None),
            *(tfjob(run, "default", "Succeeded") for run in sweep_runs[:-1]),  # one still runs
            tfjob(sweep_runs[-1], "default", None),
            tfjob("gone-long-ago", "default", "Succeeded"),
            # mnist-jobset runs on runtime jobset: a TFJob of its name is not its run
            tfjob("mnist-jobset", "ml-team", "Succeeded")]
    listing = bundled / "tfjobs.yaml"
    listing.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": jobs}))
    before = runner.invoke(main, ["list", "--format", "json"], catch_exceptions=False)
    held = {row["name"]: row["holds"] for row in json.loads(before.stdout)}
    assert held["distributed-mnist"] == 3 and held["lr-sweep"] == 12
    done = runner.invoke(main, ["retire", "--finished", str(listing)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == ["experiments/cpu-linear.yaml",
                                        "experiments/distributed-mnist.yaml"]
    assert "retired 2 finished experiments; 3 active experiments not finished" in done.stderr
    after = runner.invoke(main, ["list", "--format", "json"], catch_exceptions=False)
    rows = {row["name"]: row for row in json.loads(after.stdout)}
    assert rows["distributed-mnist"]["state"] == "retired"
    assert rows["distributed-mnist"]["holds"] == 0 and rows["distributed-mnist"]["gpus"] == 3
    assert rows["lr-sweep"]["state"] == "active" and rows["lr-sweep"]["holds"] == 12
    table = runner.invoke(main, ["list"], catch_exceptions=False)
    assert "HOLDS" in table.stdout.splitlines()[0]
    assert "namespace ml-team: 5 of 16 GPUs of its quota held" in table.stderr
    again = runner.invoke(main, ["retire", "--finished", str(listing)], catch_exceptions=False)
    assert again.exit_code == 0 and again.stdout == ""
    assert "nothing finished to retire" in again.stderr


def jobset(name: str, namespace: str, state: str | None) -> dict:
    """A JobSet as `kubectl get jobsets -o yaml` lists it, finished in `state` (None: running)."""
    conditions = [{"type": "StartupPolicyCompleted", "status": "True"}]
    if state:
        conditions.append({"type": state, "status": "True"})
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace, "uid": "2"},
            "spec": {"replicatedJobs": []},
            "status": {"conditions": conditions, **({"terminalState": state} if state else {})}}


@pytest.mark.parametrize("state", ["Completed", "Failed"])
def test_retire_finished_reads_a_jobset_by_its_own_conditions(
    bundled: Path, runner: CliRunner, state: str
) -> None:
    listing = bundled / "jobs.yaml"
    items = [jobset("mnist-jobset", "ml-team", state),
             jobset("distributed-mnist", "default", "Completed")]  # not its runtime's job
    listing.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    done = runner.invoke(main, ["retire", "--finished", str(listing)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == ["experiments/mnist-jobset.yaml"]


# --- deleting an experiment: its volume stays, and a new one may not take its name --------------


def test_retire_delete_and_diff_agree_and_a_retained_volume_is_protected(
    bundled: Path, runner: CliRunner
) -> None:
    mnist = bundled / "experiments" / "distributed-mnist.yaml"
    text = mnist.read_text()
    helpers.git_init(bundled)
    deleted = runner.invoke(main, ["retire", "distributed-mnist", "--delete"],
                            catch_exceptions=False)
    assert deleted.exit_code == 0, deleted.output
    assert "The PV and PVC (and the NAS data) stay" in deleted.stderr
    diff = runner.invoke(main, ["diff", "--base", "HEAD", "--full"], catch_exceptions=False)
    assert diff.exit_code == 0, diff.output
    [row] = [line for line in diff.stdout.splitlines() if line.startswith("distributed-mnist ")]
    assert "2 kept: PersistentVolume, PersistentVolumeClaim" in row, row
    assert "PersistentVolume" not in row.split("removed: ")[1].split(";")[0]
    assert "PersistentVolume/default-distributed-mnist-data kept (leaves Git, stays in the " \
           "cluster with its data" in diff.stdout
    helpers.git(bundled, "add", "-A")
    helpers.git(bundled, "commit", "-qm", "delete distributed-mnist")
    # months later: a new experiment of the same name, on another NAS path
    mnist.write_text(text.replace("      path: /training\n", "      path: /elsewhere\n"))
    assert runner.invoke(main, ["render"], catch_exceptions=False).exit_code == 0
    out = runner.invoke(main, ["check", "--base", "HEAD", "--no-cache"], catch_exceptions=False)
    assert out.exit_code == 1, out.output
    [line] = out.stdout.splitlines()
    assert line.startswith("experiments/distributed-mnist.yaml: PersistentVolume/"
                           "default-distributed-mnist-data $.spec: a PersistentVolume of this "
                           "name was left in the cluster when experiment distributed-mnist was "
                           "deleted"), line
    assert '"/training" -> "/elsewhere"' in line
    assert "the retained PV must be removed by an administrator first" in line
    # the same source again: the retained volume is simply taken back
    mnist.write_text(text)
    assert runner.invoke(main, ["render"], catch_exceptions=False).exit_code == 0
    again = runner.invoke(main, ["check", "--base", "HEAD", "--no-cache"], catch_exceptions=False)
    assert again.exit_code == 0, again.output


def test_diff_of_a_copy_shows_what_it_changes_in_its_source_first(
    bundled: Path, runner: CliRunner
) -> None:
    helpers.git_init(bundled)
    made = runner.invoke(main, ["rerun", "distributed-mnist", "--as", "mnist-128", "--owner",
                                "t@example.com"], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    copy = bundled / "experiments" / "mnist-128.yaml"
    copy.write_text(copy.read_text().replace('value: "128"', 'value: "256"'))
    assert runner.invoke(main, ["render"], catch_exceptions=False).exit_code == 0
    text = runner.invoke(main, ["diff", "--base", "HEAD", "--full"], catch_exceptions=False)
    assert text.exit_code == 0, text.output
    out = text.stdout
    start = out.index("=== mnist-128 is a copy of distributed-mnist; what it changes in the spec")
    assert start < out.index("=== mnist-128: TFJob/mnist-128 added")
    section = out[start:out.index("=== mnist-128: ", start + 1)]
    changed = [line for line in section.splitlines()
               if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert '-      value: "128"' in changed and '+      value: "256"' in changed
    assert len(changed) < 12, changed  # the copy's few lines, not its 494 added ones
    markdown = runner.invoke(main, ["diff", "--base", "HEAD", "--format", "markdown", "--full"],
                             catch_exceptions=False)
    body = markdown.stdout
    assert body.index("`mnist-128` is a copy of distributed-mnist") < body.index("<details>")


# --- the cluster's node types: a pod no node can hold is refused at its line --------------------

NODE_TYPES = [
    {"name": "gpu-a100", "gpus": 8, "cpu": "96", "memory": "1Ti",
     "labels": {"accelerator": "a100"}},
    {"name": "gpu-v100", "gpus": 4, "cpu": "48", "memory": "368Gi",
     "labels": {"accelerator": "nvidia-tesla-v100"}},
    {"name": "cpu", "cpu": "32", "memory": "128Gi"},
]


def set_worker(root: Path, **fields: object) -> int:
    """distributed-mnist's worker with these fields; the line of its first one."""
    path = root / "experiments" / "distributed-mnist.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"]["roles"]["worker"].update(fields)
    text = yaml.safe_dump(data, sort_keys=False)
    path.write_text(text)
    lines = text.splitlines()
    worker = lines.index("    worker:")
    key = next(iter(fields))
    return next(i for i, line in enumerate(lines[worker:], worker + 1)
                if line.strip().startswith(f"{key}:"))


def test_a_role_no_node_can_hold_is_refused_at_its_line(
    bundled: Path, runner: CliRunner
) -> None:
    config = bundled / "tfgen.yaml"
    data = yaml.safe_load(config.read_text())
    data["cluster"] = {"nodeTypes": NODE_TYPES}
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    at = next(i for i, line in enumerate(config.read_text().splitlines(), 1)
              if line.strip() == "nodeTypes:")
    assert runner.invoke(main, ["validate"], catch_exceptions=False).exit_code == 0
    line = set_worker(bundled, gpus=9, nodeSelector={"accelerator": "a100"})
    out = runner.invoke(main, ["validate"], catch_exceptions=False)
    assert out.exit_code == 1
    [problem] = out.stdout.splitlines()
    assert problem.startswith(f"experiments/distributed-mnist.yaml:{line}:")
    assert ("$.spec.roles.worker.gpus: a worker pod asks for 9 GPUs, CPU 4, memory 8Gi; no "
            "node it may run on can hold it, the largest being gpu-a100 (8 GPUs, CPU 96, memory "
            f"1Ti, cluster.nodeTypes (tfgen.yaml:{at})): the pods would stay Pending") in problem
    # without a nodeSelector the worker may go anywhere: 9 GPUs still fit no node
    set_worker(bundled, gpus=9, nodeSelector={})
    assert "the largest being gpu-a100" in runner.invoke(main, ["validate"]).stdout
    set_worker(bundled, gpus=6, nodeSelector={})  # an a100 holds it
    assert runner.invoke(main, ["validate"], catch_exceptions=False).exit_code == 0
    set_worker(bundled, gpus=6, nodeSelector={"accelerator": "nvidia-tesla-v100"})  # too many
    assert "the largest being gpu-v100 (4 GPUs" in runner.invoke(main, ["validate"]).stdout
    set_worker(bundled, gpus=1, memory="200Gi", nodeSelector={})  # memory: only the GPU nodes
    assert runner.invoke(main, ["validate"], catch_exceptions=False).exit_code == 0
    line = set_worker(bundled, nodeSelector={"accelerator": "h100"}, gpus=1, memory="8Gi")
    out = runner.invoke(main, ["validate"], catch_exceptions=False)
    [problem] = out.stdout.splitlines()
    assert problem.startswith(f"experiments/distributed-mnist.yaml:{line}:")
    assert f"no node type of cluster.nodeTypes (tfgen.yaml:{at}) has the labels " \
           "accelerator=h100: the worker pods would never be scheduled" in problem


def test_a_copy_of_a_rerun_records_only_its_own_source(bundled: Path, runner: CliRunner) -> None:
    for args in (["rerun", "distributed-mnist", "--as", "mnist-2"],
                 ["new", "mnist-3", "--from", "mnist-2"],
                 ["rerun", "mnist-3", "--as", "mnist-4"]):
        made = runner.invoke(main, [*args, "--owner", "t@example.com"], catch_exceptions=False)
        assert made.exit_code == 0, made.output
    annotations = {name: yaml.safe_load((bundled / "experiments" / f"{name}.yaml").read_text())
                   ["metadata"]["annotations"] for name in ("mnist-2", "mnist-3", "mnist-4")}
    assert annotations == {"mnist-2": {naming.RERUN_ANNOTATION: "distributed-mnist"},
                           "mnist-3": {naming.COPY_ANNOTATION: "mnist-2"},
                           "mnist-4": {naming.RERUN_ANNOTATION: "mnist-3"}}
