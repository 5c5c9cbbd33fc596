"""Reading the repository as it was at a Git revision (the pull request's base).

`tfgen check --base REF` and `tfgen diff --base REF` compare the working tree with REF. The tree
at REF is exported with `git archive REF | tar -x` into a temporary folder, so the same code
reads both sides from plain files and nothing touches the user's checkout, index or stash.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...errors import EnvironmentProblem, OptionsError
from ...repo import layout


def _git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    git = shutil.which("git")
    if git is None:
        raise EnvironmentProblem("git not found on PATH (install git; --base needs it)")
    return subprocess.run(
        [git, "-C", str(repo), *args], capture_output=True, check=False, text=not binary
    )


def check_ref(ref: str) -> str:
    """`ref` when it can name a revision at all; an OptionsError for an empty one (a CI
    variable that was not set must not turn the comparison off) or one that git would read
    as an option."""
    if not ref.strip():
        raise OptionsError(f"--base {ref!r}: empty; name the revision the change is based on "
                           "(e.g. --base origin/main)")
    if ref.startswith("-"):
        raise OptionsError(f"--base {ref}: not a revision (it looks like an option)")
    return ref


def resolve(repo: Path, ref: str) -> str:
    """Commit id of a revision: an OptionsError when `ref` cannot be one, EnvironmentProblem
    when this clone does not have it."""
    check_ref(ref)
    if _git(repo, "rev-parse", "--git-dir").returncode != 0:
        raise EnvironmentProblem(f"--base {ref}: {repo} is not in a Git repository (--base "
                                 "compares with a revision of one; clone it, or leave --base out)")
    result = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if result.returncode != 0:
        kind = _object_type(repo, ref)
        if kind is not None:  # an object, but no commit: a tree or a blob (or a tag of one)
            raise OptionsError(f"--base {ref}: names a {kind}, not a commit; --base compares "
                               "with the commit the change is based on (e.g. --base "
                               "origin/main)")
        # exit 2: the machine lacks the revision (not fetched), nothing in the repo is wrong
        raise EnvironmentProblem(
            f"--base {ref}: no such commit in {repo} (fetch it first, e.g. "
            f"`git fetch origin {ref.removeprefix('origin/')}`)"
        )
    return result.stdout.strip()


def _object_type(repo: Path, ref: str) -> str | None:
    """The type of the object `ref` names after peeling tags (tree, blob), None when it names
    none in this clone."""
    found = _git(repo, "rev-parse", "--verify", "--quiet", ref)
    if found.returncode != 0:
        return None
    # peeled from the object id: `<rev>:<path>^{}` would read `^{}` as part of the path
    peeled = _git(repo, "rev-parse", "--verify", "--quiet", f"{found.stdout.strip()}^{{}}")
    kind = _git(repo, "cat-file", "-t", peeled.stdout.strip()) if peeled.returncode == 0 else None
    return kind.stdout.strip() or None if kind is not None and kind.returncode == 0 else None


def export_tree(repo: Path, ref: str, dest: Path) -> Path:
    """Write the files of `ref` into `dest` (`git archive | tar -x`); returns `dest`."""
    commit = resolve(repo, ref)
    result = _git(repo, "archive", "--format=tar", commit, binary=True)
    if result.returncode != 0:
        raise EnvironmentProblem(f"git archive {ref} failed: {result.stderr.decode().strip()}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(result.stdout)) as archive:
        archive.extractall(dest, filter=_inside_only)
    return dest


def _inside_only(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's `data` filter, except that a member it refuses (a symlink to an absolute path
    or out of the tree, a device) is left out instead of ending the export: the readers then
    meet a missing file and say so, as they would of such a link in the work tree."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


@contextmanager
def tree_at(repo: Path, ref: str) -> Iterator[Path]:
    """A temporary folder holding the repository at `ref`, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="tfgen-base-") as tmp:
        yield export_tree(repo, ref, Path(tmp) / "tree")


def changed_paths(repo: Path, ref: str) -> set[str]:
    """Repo-relative paths that differ between `ref` and the work tree (committed or not),
    plus untracked files: everything a pull request built on `ref` would change."""
    commit = resolve(repo, ref)
    # --relative: paths relative to `repo`, which may be a subfolder of the Git work tree
    diff = _git(repo, "diff", "--name-only", "--relative", "--no-renames", commit, "--")
    if diff.returncode != 0:
        raise EnvironmentProblem(f"git diff {ref} failed: {diff.stderr.strip()}")
    untracked = _git(repo, "ls-files", "--others", "--exclude-standard")
    return {p for p in (diff.stdout + "\n" + untracked.stdout).split("\n") if p}


def changed_experiments(repo: Path, ref: str) -> set[str] | None:
    """Names of the experiments a change since `ref` touches (their spec or generated files);
    None when it touches what every experiment renders from (chart, schemas, tfgen.yaml, the
    argo/ wiring)."""
    scope: set[str] = set()
    for path in changed_paths(repo, ref):
        if layout.affects_every_experiment(path):
            return None
        name = layout.experiment_of(path)
        if name:
            scope.add(name)
    return scope


def changed_specs(repo: Path, ref: str) -> set[str]:
    """The spec files a change since `ref` adds or alters, as messages show them: where a
    problem between two experiments (a shared log folder, a GPU quota) belongs."""
    specs = {rel for rel in changed_paths(repo, ref)
             if rel.startswith(layout.EXPERIMENTS_DIR + "/") and layout.experiment_of(rel)}
    return {layout.shown(repo / rel) for rel in specs}


def deleted_files(repo: Path, ref: str, folder: str) -> dict[str, str]:
    """Repo-relative paths under `folder` that some commit up to `ref` deleted (and `ref`
    does not hold again), each with the last commit that still had it: one `git log`."""
    commit = resolve(repo, ref)
    log = _git(repo, "log", "--diff-filter=D", "--name-only", "--format=%x00%H", "--relative",
               commit, "--", folder)
    if log.returncode != 0:
        raise EnvironmentProblem(f"git log {ref} failed: {log.stderr.strip()}")
    found: dict[str, str] = {}
    for entry in log.stdout.split("\0")[1:]:
        deleting, _, names = entry.partition("\n")
        for rel in filter(None, names.split("\n")):
            found.setdefault(rel, f"{deleting.strip()}^")  # newest deletion first
    return found


def file_at(repo: Path, revision: str, rel: str) -> bytes | None:
    """The content of a repo-relative file at a revision, None when it has none."""
    shown = _git(repo, "show", f"{revision}:./{rel}", binary=True)
    return shown.stdout if shown.returncode == 0 else None
