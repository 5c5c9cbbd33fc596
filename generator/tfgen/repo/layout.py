"""Where things are in a tfgen repository, and how paths are shown.

The repository root is the nearest directory, from the given paths (or the working directory)
upwards, that holds `tfgen.yaml`. Below it: `experiments/<name>.yaml` written by people, the
chart in `charts/tfjob-experiment/`, and `argo/` written by `tfgen render`, with one folder per
experiment under `argo/experiments/`. `spec_files` is the one definition of which files are
experiment specs; every command finds specs through it.

Paths in messages are shown relative to the working directory when they lie inside it (what a
person can paste into an editor), else absolute; paths inside generated files are
repository-relative POSIX paths (the same on every machine).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ..problems import Problem

CONFIG_NAME = "tfgen.yaml"
EXPERIMENTS_DIR = "experiments"
SPEC_SUFFIXES = (".yaml", ".yml")
CHART_PATH = "charts/tfjob-experiment"
ARGO_DIR = "argo"
PROJECT_FILE = f"{ARGO_DIR}/project.yaml"
APPLICATIONSET_FILE = f"{ARGO_DIR}/applicationset.yaml"
GENERATED_DIR = f"{ARGO_DIR}/experiments"  # argo/experiments/<name>/: written by tfgen render
VALUES_FILE = "values.yaml"  # the chart values of one experiment
APP_FILE = "app.yaml"  # the ApplicationSet generator's parameters for one experiment
# Changes under these affect every experiment's rendering (for `--changed`).
SHARED_INPUTS = ("charts/", "schemas/", CONFIG_NAME)


def find_root(paths: Iterable[Path | str] = (), cwd: Path | None = None) -> Path | None:
    """The nearest ancestor (of the first path, else of cwd) that holds tfgen.yaml, or None."""
    starts = [Path(p) for p in paths] or [cwd or Path.cwd()]
    for start in starts:
        here = start.resolve()
        if not here.is_dir():
            here = here.parent
        for candidate in (here, *here.parents):
            if (candidate / CONFIG_NAME).is_file():
                return candidate
    return None


# --- experiment specs ------------------------------------------------------------------------


def is_spec_name(name: str) -> bool:
    """A *.yaml/*.yml file name (as Path(name).suffix sees it: ".yaml" alone has no suffix)."""
    dot = name.rfind(".")
    return 0 < dot < len(name) - 1 and name[dot:] in SPEC_SUFFIXES


def spec_files(directory: Path) -> list[Path]:
    """The experiment specs in a folder: its *.yaml/*.yml files (not sub-folders), symlinks
    resolved, sorted by name; empty when the folder does not exist.

    One directory listing and one `resolve` for the directory: an entry that is not a
    symlink resolves to the resolved directory plus its name.
    """
    try:
        with os.scandir(directory) as entries:
            chosen = sorted(
                (entry.name, entry)
                for entry in entries
                if is_spec_name(entry.name) and entry.is_file()
            )
    except (FileNotFoundError, NotADirectoryError):
        return []
    base = directory.resolve()
    return [
        Path(entry.path).resolve() if entry.is_symlink() else base / name for name, entry in chosen
    ]


def discover(paths: Iterable[Path | str]) -> tuple[list[Path], list[Problem]]:
    """Spec files from paths a person gave: files as given, folders' specs (`spec_files`);
    a folder without specs and a missing path are problems. Files come resolved, once each."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = spec_files(path)
            if not found:
                problems.append(Problem(shown(path), message="no *.yaml experiment files here"))
            files += found
        elif path.exists():
            files.append(path.resolve())
        else:
            problems.append(Problem(shown(path), message="no such file or directory"))
    return list(dict.fromkeys(files)), problems


def experiment_of(rel: str) -> str | None:
    """The experiment a repository-relative path belongs to (its spec or its generated folder),
    None for a path that belongs to none."""
    if rel.startswith(GENERATED_DIR + "/"):
        return rel.split("/")[2]
    folder, _, name = rel.rpartition("/")
    if folder == EXPERIMENTS_DIR and is_spec_name(name):
        return name.rpartition(".")[0]
    return None


def affects_every_experiment(rel: str) -> bool:
    """Whether a change to this repository-relative path changes every experiment's rendering:
    the chart, the schemas, tfgen.yaml, the argo/ wiring."""
    return rel.startswith(SHARED_INPUTS) or (
        rel.startswith(ARGO_DIR + "/") and not rel.startswith(GENERATED_DIR + "/")
    )


# --- generated files -------------------------------------------------------------------------


def generated_folder(name: str) -> str:
    """argo/experiments/<name>: the generated files of one experiment."""
    return f"{GENERATED_DIR}/{name}"


def is_generated_location(rel: str) -> bool:
    """Where tfgen writes: argo/*.yaml and anything below argo/experiments/."""
    if rel.startswith(GENERATED_DIR + "/"):
        return True
    folder, _, name = rel.rpartition("/")
    return folder == ARGO_DIR and name.endswith(".yaml")


def generated_files(root: Path) -> dict[str, bytes]:
    """Every file where tfgen writes (`is_generated_location`), repository-relative POSIX path
    -> bytes, as rendering compares against them. Symlinked folders are not entered."""
    found: dict[str, bytes] = {}
    argo = root / ARGO_DIR
    for path in _files_below(argo, recurse=False):
        if path.name.endswith(".yaml"):
            found[f"{ARGO_DIR}/{path.name}"] = _read(path)
    for path in _files_below(root / GENERATED_DIR, recurse=True):
        found[path.relative_to(root).as_posix()] = _read(path)
    return found


def _files_below(directory: Path, *, recurse: bool) -> list[Path]:
    # One scandir per folder and no stat per plain file.
    found: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        if recurse and entry.is_dir() and not entry.is_symlink():
            found += _files_below(Path(entry.path), recurse=True)
        elif entry.is_file():
            found.append(Path(entry.path))
    return found


def _read(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


# --- showing paths ---------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _real(path: str) -> str:
    return os.path.realpath(path)


def _inside(path: str, folder: str) -> str | None:
    """`path` relative to `folder` (both absolute, `folder` resolved), None when outside.
    A string comparison first: this runs once per experiment, and resolving costs syscalls."""
    if path == folder:
        return ""
    rest = path[len(folder) :]
    if path.startswith(folder + os.sep) and "/." not in rest:
        return rest[1:]
    real = os.path.realpath(path)
    if real.startswith(folder + os.sep):
        return real[len(folder) + 1 :]
    return None


def shown(path: Path | str, root: Path | None = None) -> str:
    """A path as messages show it: relative to the working directory when inside it, else
    absolute. A relative `path` is relative to `root` when given, else shown as it is."""
    text = str(path)
    if not os.path.isabs(text):
        if root is None:
            return text
        text = os.path.join(str(root), text)
    inside = _inside(text, _real(os.getcwd()))
    return text if inside is None else inside or "."


def relative(root: Path, path: Path) -> str:
    """A file's repository-relative POSIX path (how generated files name their source), or
    the path as shown when it lies outside the repository."""
    inside = _inside(str(path if path.is_absolute() else Path.cwd() / path), _real(str(root)))
    return shown(path) if inside is None else inside.replace(os.sep, "/")
