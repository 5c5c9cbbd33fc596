"""Reading the repository at a base revision, and what changed since."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import build_file_tree, git, git_init
from tfgen.errors import EnvironmentProblem, OptionsError
from tfgen.gate.base import changed_paths, check_ref, export_tree, resolve, tree_at


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
