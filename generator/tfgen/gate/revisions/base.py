"""Reading the repository as it was at a Git revision (the pull request's base).

`tfgen check --base REF` and `tfgen diff --base REF` compare the working tree with REF. The tree
at REF is exported with `git archive REF | tar -x` into a temporary folder, so the same code
reads both sides from plain files and nothing touches the user's checkout, index or stash.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

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
        extract(archive, dest)
    return dest


def extract(archive: tarfile.TarFile, dest: Path) -> None:
    """Directories, regular files and the symbolic links that stay inside `dest`; nothing else.

    Written here rather than left to `extractall(filter=...)`: that argument exists only from
    Python 3.10.12 / 3.11.4 / 3.12, and Debian 12's Python 3.11.2 refuses it. A member it does not
    write (a name that is absolute or climbs with `..`, a link leaving the tree, a hard link,
    a device, a FIFO) is left out rather than ending the export: the readers then meet a
    missing file and say so, as they would of such a link in the work tree.
    """
    root = dest.resolve()
    links: list[tuple[Path, str]] = []
    for member in archive:
        parts = PurePosixPath(member.name).parts
        if not parts or member.name.startswith("/") or ".." in parts:
            continue
        target = root.joinpath(*parts)
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
        elif member.isreg():
            source = archive.extractfile(member)
            if source is None:  # pragma: no cover - a regular member always has content
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            os.chmod(target, 0o755 if member.mode & 0o100 else 0o644)
        elif member.issym():
            links.append((target, member.linkname))
    _link_inside(root, links)


def _link_inside(root: Path, links: list[tuple[Path, str]]) -> None:
    """Make `links` (path, target) last, so that no file was written through one; keep each
    only while it resolves inside `root`, judged once all exist (one may point through
    another that comes after it)."""
    made: list[Path] = []
    for target, linkname in links:
        if not os.path.lexists(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(linkname)
            made.append(target)
    while leaving := [link for link in made if not _inside(root, link)]:
        for link in leaving:
            link.unlink()
            made.remove(link)


def _inside(root: Path, link: Path) -> bool:
    return Path(os.path.realpath(link)).is_relative_to(root)


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
