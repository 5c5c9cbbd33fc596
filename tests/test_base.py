"""Reading the repository at a base revision, and what changed since; what a started run of
each runtime cannot take of it (`tfgen check --base`), in a copy of this repository committed
to a real Git repository, rendered by the real helm."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import build_file_tree, copy_repo_parts, git, git_init
from tfgen.cli import main
from tfgen.errors import EnvironmentProblem, OptionsError
from tfgen.gate.revisions.base import changed_paths, check_ref, export_tree, resolve, tree_at
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
    plan, problems = plan_repository(root)
    assert plan is not None and not problems and not plan.problems, problems
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
    [line] = out.stdout.splitlines()
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
    # a run left for another: the live JobSet would be pruned, a renamed run
    _edit(root, (JOBSET, "lr: [0.1, 0.01]", "lr: [0.1, 0.05]"))
    out = _check(runner, root)
    assert out.exit_code == 1, out.output
    assert ("JobSet/mnist-jobset-0p05 $.metadata.name: JobSet was 'mnist-jobset-0p01' at the "
            "base revision and is 'mnist-jobset-0p05' now") in out.stdout, out.stdout
