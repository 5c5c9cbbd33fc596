"""Reading the repository at a base revision, and what changed since; what a started run of
each runtime cannot take of it (`tfgen check --base`), in a copy of this repository committed
to a real Git repository, rendered by the real helm."""

from __future__ import annotations

import importlib.metadata
import io
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import REPO_ROOT, build_file_tree, copy_repo_parts, examples, git, git_init
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.cli import main
from tfgen.errors import EnvironmentProblem, OptionsError
from tfgen.gate.revisions.base import (
    changed_paths,
    check_ref,
    export_tree,
    extract,
    resolve,
    tree_at,
)
from tfgen.problems import errors_of
from tfgen.repo.runtimes.changes import aligned, as_stored
from tfgen.validate.yaml.loader import load_file


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = build_file_tree(tmp_path / "repo", {
        "experiments/a.yaml": "a: 1\n", "experiments/b.yaml": "b: 1\n", "charts/c/x": "1\n",
    })
    return git_init(root)


def test_export_tree_gives_files_at_ref(repo: Path, tmp_path: Path) -> None:
    (repo / "experiments/a.yaml").write_text("a: 2\n")
    git(repo, "commit", "-qam", "change a")
    out = export_tree(repo, "HEAD~1", tmp_path / "out")
    assert (out / "experiments/a.yaml").read_text() == "a: 1\n"
    with tree_at(repo, "HEAD") as tree:
        assert (tree / "experiments/a.yaml").read_text() == "a: 2\n"
    assert not tree.exists()


def test_changed_paths_include_uncommitted_and_untracked(repo: Path) -> None:
    (repo / "experiments/a.yaml").write_text("a: 2\n")  # modified, not committed
    (repo / "experiments/new.yaml").write_text("n: 1\n")  # untracked
    (repo / "experiments/b.yaml").unlink()  # deleted
    assert changed_paths(repo, "HEAD") == {
        "experiments/a.yaml", "experiments/new.yaml", "experiments/b.yaml"}


def test_changed_paths_in_a_subfolder_repository(tmp_path: Path) -> None:
    outer = build_file_tree(tmp_path / "outer", {"ml/tfgen.yaml": "x\n", "other/f": "1\n"})
    git_init(outer)
    (outer / "ml/tfgen.yaml").write_text("y\n")
    (outer / "other/f").write_text("2\n")
    assert changed_paths(outer / "ml", "HEAD") == {"tfgen.yaml"}


def test_unknown_ref_names_it(repo: Path) -> None:
    with pytest.raises(EnvironmentProblem, match="no-such-branch"):
        changed_paths(repo, "no-such-branch")


@pytest.mark.parametrize(("revision", "kind"), [
    ("HEAD^{tree}", "tree"), ("HEAD:experiments", "tree"), ("HEAD:experiments/a.yaml", "blob"),
    ("tree-tag", "tree"), ("blob-tag", "blob")])
def test_a_ref_naming_a_tree_or_a_blob_says_so(repo: Path, revision: str, kind: str) -> None:
    """Not "no such commit, fetch it": the object is there, and is not a commit (exit 2, a
    usage error), for check and diff alike."""
    git(repo, "tag", "-a", "-m", "t", "tree-tag", "HEAD^{tree}")
    git(repo, "tag", "blob-tag", "HEAD:experiments/a.yaml")
    with pytest.raises(OptionsError, match=f"names a {kind}, not a commit"):
        resolve(repo, revision)
    with pytest.raises(EnvironmentProblem, match="no such commit"):
        resolve(repo, "HEAD:experiments/none.yaml")


@pytest.mark.parametrize("ref", ["", "  ", "\t"])
def test_empty_ref_is_a_usage_error(repo: Path, ref: str) -> None:
    # An unset CI variable must not quietly turn the base comparison off.
    with pytest.raises(OptionsError, match="empty"):
        check_ref(ref)
    with pytest.raises(OptionsError, match="empty"):
        resolve(repo, ref)


def test_option_like_ref_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(OptionsError, match="looks like an option"):
        resolve(repo, "--output=/tmp/x")
    assert check_ref("origin/main") == "origin/main"


def test_base_outside_a_git_repository_says_so(tmp_path: Path) -> None:
    folder = build_file_tree(tmp_path / "plain", {"tfgen.yaml": "x: 1\n"})
    with pytest.raises(EnvironmentProblem, match="is not in a Git repository"):
        resolve(folder, "HEAD")


def test_export_leaves_out_links_that_leave_the_tree(tmp_path: Path) -> None:
    root = build_file_tree(tmp_path / "repo", {"experiments/a.yaml": "a: 1\n"})
    (root / "argo").mkdir()
    (root / "argo" / "abs").symlink_to("/etc")
    (root / "argo" / "up").symlink_to("../../outside")
    (root / "argo" / "in").symlink_to("../experiments/a.yaml")
    git_init(root)
    tree = export_tree(root, "HEAD", tmp_path / "tree")
    assert (tree / "experiments" / "a.yaml").read_text() == "a: 1\n"
    assert not (tree / "argo" / "abs").is_symlink()
    assert not (tree / "argo" / "up").is_symlink()
    assert (tree / "argo" / "in").read_text() == "a: 1\n"  # a link inside the tree is kept



def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    """An archive of `members` in order, opened for reading: what `git archive` could send if
    it were hostile."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as out:
        for info, content in members:
            info.size = len(content)
            out.addfile(info, io.BytesIO(content))
    data.seek(0)
    return tarfile.open(fileobj=data)


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "",
            mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


def test_extract_writes_only_inside_the_tree(tmp_path: Path) -> None:
    # A link is judged once all links exist: `a` names `c/b/../..`, which stays inside the
    # tree until `c/b` (a link to `..`) appears after it, and then leaves it.
    archive = _tar(
        (_member("ok/f.txt"), b"f\n"), (_member("ok/run.sh", mode=0o755), b"#!/bin/sh\n"),
        (_member("/abs.txt"), b"x"), (_member("../up.txt"), b"x"),
        (_member("ok/../../up2.txt"), b"x"),
        (_member("ok/hard", tarfile.LNKTYPE, "ok/f.txt"), b""),
        (_member("ok/fifo", tarfile.FIFOTYPE), b""), (_member("ok/dev", tarfile.CHRTYPE), b""),
        (_member("c", tarfile.DIRTYPE, mode=0o755), b""),
        (_member("a", tarfile.SYMTYPE, "c/b/../.."), b""),
        (_member("c/b", tarfile.SYMTYPE, ".."), b""),
        (_member("in", tarfile.SYMTYPE, "ok/f.txt"), b""),
        (_member("abs", tarfile.SYMTYPE, "/etc"), b""),
        (_member("ok/up", tarfile.SYMTYPE, "../../outside"), b""),
    )
    dest = tmp_path / "tree"
    extract(archive, dest)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert written == ["tree", "tree/c", "tree/c/b", "tree/in", "tree/ok", "tree/ok/f.txt",
                       "tree/ok/run.sh"]
    assert (dest / "in").read_text() == "f\n"
    assert os.access(dest / "ok/run.sh", os.X_OK) and not os.access(dest / "ok/f.txt", os.X_OK)


def _admitted_pythons() -> list[Any]:
    """Interpreters on this machine that `requires-python` admits, other than this one, one
    per version (named by it, found in a fixed order): the export must not depend on a feature
    a patch release added (`extractall(filter=)`)."""
    from packaging.specifiers import SpecifierSet
    admitted = SpecifierSet(importlib.metadata.metadata("tfgen-gitops")["Requires-Python"])
    found: dict[str, str] = {}
    folders = dict.fromkeys(["/usr/bin", "/usr/local/bin",
                             *os.environ.get("PATH", "").split(os.pathsep)])
    for folder in folders:
        for python in sorted(Path(folder).glob("python3.[0-9]*")):
            if not python.name.replace("python", "").replace(".", "").isdigit():
                continue
            version = subprocess.run([python, "-c", "import platform;"
                                      "print(platform.python_version())"],
                                     capture_output=True, text=True, check=False).stdout.strip()
            if version in admitted and Path(python).resolve() != Path(sys.executable).resolve():
                found.setdefault(version, str(python))
    return [pytest.param(path, id=f"python{version}") for version, path in sorted(found.items())]


@pytest.mark.parametrize("python", _admitted_pythons() or [pytest.param(
    "", marks=pytest.mark.skip(reason="no other admitted Python on this machine"))])
def test_export_works_on_every_admitted_python(python: str, repo: Path, tmp_path: Path) -> None:
    script = ("import sys; from pathlib import Path; from tfgen.gate.revisions.base import "
              "export_tree; print(export_tree(Path(sys.argv[1]), 'HEAD', Path(sys.argv[2])))")
    done = subprocess.run([python, "-c", script, str(repo), str(tmp_path / "out")],
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "generator")},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out/experiments/a.yaml").read_text() == "a: 1\n"


# --- what a started run cannot take, on every runtime ------------------------------------------

JOBSET = "experiments/mnist-jobset.yaml"  # runtime jobset, queue gpu-team, priority research
TFJOB = "experiments/distributed-mnist.yaml"  # the default runtime, tfjob
RERUN = "`tfgen rerun {name} --as NEW`"
Edit = tuple[str, str, str]  # (file, text, its replacement)


def _edit(root: Path, *edits: Edit) -> None:
    """Replace text in files as a person would (comments and lines kept), then render."""
    from tfgen.render import apply_plan, plan_repository

    for rel, old, new in edits:
        text = (root / rel).read_text()
        assert old in text, (rel, old)
        (root / rel).write_text(text.replace(old, new, 1))
    plan, problems = plan_repository(root)  # (a queued TFJob's warning is no problem)
    assert plan is not None and not errors_of(problems) and not plan.problems, problems
    apply_plan(plan, prune=True)


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """A copy of this repository with `edits`, committed: what runs in the cluster."""
    def start(*edits: Edit) -> Path:
        root = copy_repo_parts(tmp_path / "repo")
        monkeypatch.chdir(root)
        _edit(root, ("tfgen.yaml", "queues: [gpu-team]", "queues: [gpu-team, gpu-batch]"),
              *edits)
        return git_init(root)
    return start


def _check(runner: CliRunner, root: Path) -> Result:
    return runner.invoke(main, ["check", "--root", str(root), "--base", "HEAD", "--changed"],
                         catch_exceptions=False)


def _refused_at(out: Result, root: Path, spec: str, *parts: str | int) -> str:
    """The one problem of `out`, at the spec field `parts`, naming the way out."""
    assert out.exit_code == 1, out.output
    [line] = [line for line in out.stdout.splitlines() if ": warning: " not in line]
    at = load_file(root / spec).locate(parts)
    assert line.startswith(f"{spec}:{at[0]}:{at[1]}: "), line
    name = load_file(root / spec).data["metadata"]["name"]
    assert RERUN.format(name=name) in line, line
    return line


def test_a_started_jobsets_args_are_refused_at_their_line(
    runner: CliRunner, started: Callable[..., Path]
) -> None:
    root = started()
    _edit(root, (JOBSET, "/input_data\n", "/input_data_v2\n"))
    line = _refused_at(_check(runner, root), root, JOBSET, "spec", "args", 0)
    # once, whole, naming every role's replicated job it changes
    assert ('$.spec.args[0]: changed from "--data_dir=/training/mnist-jobset/input_data" to '
            '"--data_dir=/training/mnist-jobset/input_data_v2", which a started run cannot '
            "take: a started JobSet takes no change to its spec but suspend (its API refuses "
            "the rest: field is immutable) (JobSet/mnist-jobset Chief, JobSet/mnist-jobset PS, "
            "JobSet/mnist-jobset Worker)") in line, line


def test_a_started_jobset_takes_suspend_and_nothing_else(
    runner: CliRunner, started: Callable[..., Path]
) -> None:
    # without a queue: Kueue owns a queued run's suspend
    root = started((JOBSET, "  queue: gpu-team\n  priority: research\n", ""))
    # a Job's backoffLimit is the JobSet's replicated jobs: immutable, unlike a TFJob's
    _edit(root, (JOBSET, "    backoffLimit: 3\n", "    backoffLimit: 4\n    suspend: true\n"))
    # one problem: the backoffLimit's, none of suspend's
    line = _refused_at(_check(runner, root), root, JOBSET, "spec", "runPolicy", "backoffLimit")
    assert "$.spec.runPolicy.backoffLimit: changed from 3 to 4, which a started run" in line
    _edit(root, (JOBSET, "backoffLimit: 4", "backoffLimit: 3"))
    out = _check(runner, root)
    assert out.exit_code == 0, out.output  # suspend alone: the JobSet takes it



def test_diff_marks_the_change_check_refuses(runner: CliRunner, started: Callable[..., Path]
                                            ) -> None:
    root = started()
    _edit(root, (JOBSET, "/input_data\n", "/input_data_v2\n"))
    refusal = _refused_at(_check(runner, root), root, JOBSET, "spec", "args", 0)
    out = runner.invoke(main, ["diff", "--root", str(root), "--base", "HEAD"],
                        catch_exceptions=False)
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[1].split()[:3] == ["mnist-jobset", "changed,", "refused"], out.stdout
    assert lines[-1] == refusal  # said as check says it
    assert "Next: make the refused changes a new run" in out.stderr
    markdown = runner.invoke(main, ["diff", "--root", str(root), "--base", "HEAD", "--format",
                                    "markdown"], catch_exceptions=False).stdout
    assert "| `mnist-jobset` | changed, **refused** |" in markdown
    assert f"- {refusal}" in markdown.splitlines()
    # a change a started run takes is not marked: TensorBoard is no part of the training
    _edit(root, (JOBSET, "/input_data_v2\n", "/input_data\n"))
    _edit(root, (JOBSET, "  tensorboard:\n", "  tensorboard:\n    reloadInterval: 60\n"))
    out = runner.invoke(main, ["diff", "--root", str(root), "--base", "HEAD"],
                        catch_exceptions=False)
    assert out.stdout.splitlines()[1].split()[:2] == ["mnist-jobset", "changed"], out.stdout
    assert "refused" not in out.output


@pytest.mark.parametrize("spec", [JOBSET, TFJOB])
def test_a_refused_change_is_said_while_argo_is_still_stale(
    runner: CliRunner, started: Callable[..., Path], spec: str
) -> None:
    # One round trip: the first check says the change can never merge, beside the stale
    # values file, instead of asking to render and commit files for it first.
    root = started()
    path = root / spec
    path.write_text(path.read_text().replace("/input_data\n", "/input_data_v2\n", 1))
    out = _check(runner, root)
    assert out.exit_code == 1, out.output
    at = load_file(path).locate(("spec", "args", 0))
    name = load_file(path).data["metadata"]["name"]
    lines = out.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == [
        f"argo/experiments/{name}/values.yaml", f"{spec}:{at[0]}:{at[1]}"], out.stdout
    assert "generated file is out of date" in lines[0]
    assert "$.spec.args[0]: changed from" in lines[1] and RERUN.format(name=name) in lines[1]


@pytest.mark.parametrize(("spec", "edit", "change", "was", "now"), [
    (JOBSET, ("runtime: jobset", "runtime: tfjob"), '"jobset" to "tfjob"', "JobSet", "TFJob"),
    (TFJOB, ("spec:\n", "spec:\n  runtime: jobset\n"), '(absent) to "jobset"', "TFJob",
     "JobSet"),
], ids=["jobset-to-tfjob", "tfjob-to-jobset"])
def test_switching_a_started_runs_runtime_is_one_problem_at_its_line(
    runner: CliRunner, started: Callable[..., Path], spec: str, edit: tuple[str, str],
    change: str, was: str, now: str,
) -> None:
    root = started()
    # every field of the other kind differs, and so does the args: the runtime alone is said
    _edit(root, (spec, *edit), (spec, "/input_data\n", "/input_data_v2\n"))
    line = _refused_at(_check(runner, root), root, spec, "spec", "runtime")
    assert (f"$.spec.runtime: changed from {change}, which a started run cannot take: the "
            f"{was} would be deleted and a {now} started: that is a new run") in line, line


@pytest.mark.parametrize(("field", "old", "new"), [
    ("queue", "gpu-team", "gpu-batch"), ("priority", "research", "production"),
])
def test_a_started_runs_queue_and_priority_are_refused_at_their_line(
    runner: CliRunner, started: Callable[..., Path], field: str, old: str, new: str
) -> None:
    root = started()
    _edit(root, (JOBSET, f"{field}: {old}", f"{field}: {new}"))
    line = _refused_at(_check(runner, root), root, JOBSET, "spec", field)
    assert (f'$.spec.{field}: changed from "{old}" to "{new}", which a started run cannot '
            "take: Kueue reads the queue and priority when it admits the workload; a running "
            "workload is not moved (JobSet/mnist-jobset)") in line, line


def test_a_jobset_sweep_gains_runs_but_keeps_its_live_ones(
    runner: CliRunner, started: Callable[..., Path]
) -> None:
    learning = "    - --log_dir=/training/mnist-jobset/logs\n"
    root = started((JOBSET, learning, learning + "    - --learning_rate=((lr))\n"
                    "  sweep:\n    parameters:\n      lr: [0.1]\n"))
    _edit(root, (JOBSET, "lr: [0.1]", "lr: [0.1, 0.01]"))
    out = _check(runner, root)
    assert out.exit_code == 0, out.output  # a new JobSet beside the live one: new training
    git(root, "commit", "-qam", "one run more")
    # a value replaced: the live JobSet would be pruned and another started in its place,
    # refused once at the parameter's line, pairing the two
    _edit(root, (JOBSET, "lr: [0.1, 0.01]", "lr: [0.1, 0.05]"))
    line = _refused_at(_check(runner, root), root, JOBSET, "spec", "sweep", "parameters", "lr")
    # diff marks it, saying it as check does
    diff = runner.invoke(main, ["diff", "--root", str(root), "--base", "HEAD"],
                         catch_exceptions=False)
    assert diff.stdout.splitlines()[-1] == line, diff.stdout
    assert ("$.spec.sweep.parameters.lr: 0.01 replaced by 0.05: a started run cannot take it; "
            "Argo CD would delete the live runs mnist-jobset-0p01 and start others in their "
            "place (mnist-jobset-0p01 -> mnist-jobset-0p05) (keep 0.01 and list 0.05 beside it: "
            "new runs, the live ones kept; or rerun the sweep under a new name (`tfgen rerun "
            "mnist-jobset --as NEW`) and change it there)") in line, line


@pytest.mark.parametrize(("edit", "said"), [
    # a value removed: its runs are pruned; said, not refused (how part of a sweep stops)
    (("lr: [0.1, 0.01, 0.001]", "lr: [0.1, 0.01]"),
     "warning: $.spec.sweep.parameters.lr: 0.001 removed: Argo CD deletes the live runs "
     "lr-sweep-0p001-64, lr-sweep-0p001-128 (their training stops; their logs and checkpoints "
     "stay on the NAS)"),
    # a value replaced in a grid: each new run paired with the live one it replaces, and the
    # runs merely added beside them (batch 256) blamed for nothing
    (("lr: [0.1, 0.01, 0.001]\n      batch: [64, 128]",
      "lr: [0.1, 0.01, 0.005]\n      batch: [64, 128, 256]"),
     "$.spec.sweep.parameters.lr: 0.001 replaced by 0.005: a started run cannot take it; Argo "
     "CD would delete the live runs lr-sweep-0p001-64, lr-sweep-0p001-128 and start others in "
     "their place (lr-sweep-0p001-64 -> lr-sweep-0p005-64; lr-sweep-0p001-128 -> "
     "lr-sweep-0p005-128)"),
], ids=["removed", "replaced"])
def test_a_live_sweeps_runs_are_judged_at_the_parameters_line(
    runner: CliRunner, started: Callable[..., Path], edit: tuple[str, str], said: str
) -> None:
    sweep = "experiments/lr-sweep.yaml"
    root = started()
    _edit(root, (sweep, *edit))
    out = _check(runner, root)
    at = load_file(root / sweep).locate(("spec", "sweep", "parameters", "lr"))
    [line] = [line for line in out.stdout.splitlines() if "lr-sweep" in line]
    assert line.startswith(f"{sweep}:{at[0]}:{at[1]}: {said}"), line
    assert out.exit_code == (0 if "warning" in said else 1), out.output


def test_what_the_server_stores_alike_is_no_change_to_a_started_run(
    runner: CliRunner, started: Callable[..., Path]
) -> None:
    # The base as an older tfgen wrote it: GPU counts as numbers, Job templates without the
    # empty metadata the JobSet webhook writes. The server holds the same objects either way.
    root = started()
    values = root / "argo/experiments/mnist-jobset/values.yaml"
    assert 'nvidia.com/gpu: "1"' in values.read_text()
    values.write_text(values.read_text().replace('nvidia.com/gpu: "1"', "nvidia.com/gpu: 1"))
    chart = root / "charts/tfjob-experiment/templates/jobset.yaml"
    assert "        metadata: {}\n" in chart.read_text()
    chart.write_text(chart.read_text().replace("        metadata: {}\n", "", 1))
    git(root, "commit", "-qam", "as an older tfgen rendered it")
    git(root, "checkout", "-q", "HEAD~1", "--", "argo", "charts")
    out = _check(runner, root)
    assert out.exit_code == 0, out.output
    # a real change beside them is still said, alone
    _edit(root, (JOBSET, "/input_data\n", "/input_data_v2\n"))
    line = _refused_at(_check(runner, root), root, JOBSET, "spec", "args", 0)
    assert "metadata" not in line and "nvidia.com/gpu" not in line, line


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["1", "2", "", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "b", "metadata"]), inner, max_size=3),
    max_leaves=12)


@settings(max_examples=examples(300), deadline=None)
@given(old=JSON, new=JSON)
def test_aligning_changes_nothing_the_server_stores(old: Any, new: Any) -> None:
    result = aligned(old, new)
    assert as_stored(result) == as_stored(new)  # what the new rendering asks is kept ...
    if as_stored(old) == as_stored(new):
        assert result == old  # ... and where the server sees no change, there is none
    assert aligned(new, new) == new


# Two clusters instead of the one implicit one (tfgen.yaml's own version and destination moved
# into them): the bundled specs stay on gpu-a, their namespaces' home.
TWO_CLUSTERS = (
    ("tfgen.yaml", 'kubernetesVersion: "1.30"',
     'clusters:\n'
     '  - {name: gpu-a, destination: {server: https://kubernetes.default.svc}, '
     'kubernetesVersion: "1.30"}\n'
     '  - {name: gpu-b, destination: {name: gpu-b}, kubernetesVersion: "1.33"}\n#'),
    ("tfgen.yaml", "  destinationServer: https://kubernetes.default.svc\n", ""),
)


def test_moving_a_started_run_to_another_cluster_is_refused_at_its_line(
    runner: CliRunner, started: Callable[..., Path]
) -> None:
    root = started(*TWO_CLUSTERS)
    assert _check(runner, root).exit_code == 0
    _edit(root, (TFJOB, "spec:\n", "spec:\n  cluster: gpu-b\n"))
    app = yaml.safe_load((root / "argo/experiments/distributed-mnist/app.yaml").read_text())
    assert (app["cluster"], app["destination"]) == ("gpu-b", {"server": "", "name": "gpu-b"})
    line = _refused_at(_check(runner, root), root, TFJOB, "spec", "cluster")
    assert ("$.spec.cluster: distributed-mnist moves from cluster gpu-a (server "
            "https://kubernetes.default.svc) to cluster gpu-b (Argo CD cluster gpu-b), which a "
            "started run cannot take") in line, line
    assert ("set spec.cluster: gpu-a to keep it there, and start a new run on gpu-b, `tfgen "
            "rerun distributed-mnist --as NEW` (with --cluster gpu-b)") in line
    # the way out it names: the live run stays, a new run goes to the other cluster
    _edit(root, (TFJOB, "spec:\n  cluster: gpu-b\n", "spec:\n"))
    made = runner.invoke(main, ["rerun", "distributed-mnist", "--as", "mnist-on-b", "--cluster",
                                "gpu-b", "--owner", "t@example.com"], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    _edit(root)
    new = yaml.safe_load((root / "argo/experiments/mnist-on-b/app.yaml").read_text())
    assert new["destination"] == {"server": "", "name": "gpu-b"}
    assert _check(runner, root).exit_code == 0


def test_a_move_is_said_while_argo_is_still_stale(
    runner: CliRunner, started: Callable[..., Path]
) -> None:
    root = started(*TWO_CLUSTERS)
    spec = root / TFJOB
    spec.write_text(spec.read_text().replace("spec:\n", "spec:\n  cluster: gpu-b\n", 1))
    out = _check(runner, root)  # argo/ not rendered: the move is judged on what render writes
    assert out.exit_code == 1
    assert "distributed-mnist moves from cluster gpu-a" in out.stdout, out.stdout


def test_diff_shows_the_cluster_and_refuses_the_move(
    runner: CliRunner, started: Callable[..., Path]
) -> None:
    root = started(*TWO_CLUSTERS)
    _edit(root, (TFJOB, "spec:\n", "spec:\n  cluster: gpu-b\n"))
    out = runner.invoke(main, ["diff", "--root", str(root), "--base", "HEAD"],
                        catch_exceptions=False)
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["EXPERIMENT", "CLUSTER", "CHANGE", "OBJECTS", "GPUS"], out.stdout
    # the objects are the same (the chart knows no cluster): the move alone is the change
    assert lines[1].split()[:5] == ["distributed-mnist", "gpu-a", "->", "gpu-b", "changed,"]
    assert "distributed-mnist moves from cluster gpu-a" in out.stdout
