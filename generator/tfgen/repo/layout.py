"""Where things are in a tfgen repository, and how paths are shown.

The repository root is the nearest directory, from the given paths (or the working directory)
upwards, that holds `tfgen.yaml`. Below it: `experiments/<name>.yaml` written by people, the
chart in `charts/tfjob-experiment/`, and `argo/` written by `tfgen render`, with one folder per
experiment under `argo/experiments/` (render also writes `.github/CODEOWNERS`). `spec_files`
is the one definition of which files are experiment specs (`*.yaml` directly in
`experiments/`); every command finds specs through it, and `misplaced_specs` names what looks
like a spec but is not one (`.yml`, `.YAML`, sub-folders), so that nothing is skipped in
silence. Files are read through `files.read_input`.

Paths in messages are shown relative to the working directory when they lie inside it (what a
person can paste into an editor), else absolute; paths inside generated files are
repository-relative POSIX paths (the same on every machine).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from functools import lru_cache
from pathlib import Path

from ..errors import OptionsError
from ..problems import Problem
from .files import Refused, read_input

CONFIG_NAME = "tfgen.yaml"
EXPERIMENTS_DIR = "experiments"
# One spelling: `git ls-files` pathspecs, the ApplicationSet and people's reviews all see the
# same files only when there is one. Other spellings (.yml, .YAML) are refused, not skipped.
SPEC_SUFFIX = ".yaml"
YAML_SUFFIXES = (".yaml", ".yml")  # compared in lower case: what looks like YAML
CHART_PATH = "charts/tfjob-experiment"
ARGO_DIR = "argo"
PROJECT_FILE = f"{ARGO_DIR}/project.yaml"
APPLICATIONSET_FILE = f"{ARGO_DIR}/applicationset.yaml"
GENERATED_DIR = f"{ARGO_DIR}/experiments"  # argo/experiments/<name>/: written by tfgen render
# A file being written is `.<name>.tfgen-tmp-<random>` next to its target: never a *.yaml (no
# reader takes it for a generated file), and recognisably tfgen's (the next render removes it).
TEMP_MARK = ".tfgen-tmp-"
RENDER_LOCK = f"{ARGO_DIR}/.tfgen-render.lock"  # held while `tfgen render` writes argo/
VALUES_FILE = "values.yaml"  # the chart values of one experiment
APP_FILE = "app.yaml"  # the ApplicationSet generator's parameters for one experiment
# Written by `tfgen render` from tfgen.yaml's `owners`, where GitHub looks for code owners.
CODEOWNERS_FOLDER = ".github"
CODEOWNERS_FILE = f"{CODEOWNERS_FOLDER}/CODEOWNERS"
# `tfgen run-local`'s data folders, `.tfgen-run/<name>/` at the root: kept between runs (a
# rerun finds its data and checkpoints), never committed. tfgen marks the folder as its own with
# RUN_MARK inside it (a .gitignore of `*`, so it stays out of Git even without the root's),
# and `--clean` empties only a folder so marked.
LOCAL_RUN_DIR = ".tfgen-run"
# Changes under these affect every experiment's rendering (for `--changed`).
SHARED_INPUTS = ("charts/", "schemas/", CONFIG_NAME)
# The upstream CRDs that tfgen's CRD schemas are converted from (by scripts/crd_schemas.py),
# kept in tfgen's own repository: no input of tfgen, not shipped, not copied by `tfgen init`.
SCHEMAS_DIR = "schemas"  # a team repository's copy of tfgen's schemas (`owned`)
UPSTREAM_SCHEMAS_DIR = f"{SCHEMAS_DIR}/upstream"
RUN_MARK = ".gitignore"
RUN_MARK_TEXT = "# local data of `tfgen run-local`, one folder per experiment: never commit it\n*\n"


def find_root(paths: Iterable[Path | str] = (), cwd: Path | None = None) -> Path | None:
    """The nearest ancestor (of the first path, else of cwd) that holds tfgen.yaml, or None.

    Any tfgen.yaml counts, whatever its type: a pipe or a link there is refused when read, with
    a line that says so, rather than passed over for another root or the built-in defaults.
    """
    starts = [Path(p) for p in paths] or [cwd or Path.cwd()]
    for start in starts:
        here = start.resolve()
        if not here.is_dir():
            here = here.parent
        for candidate in (here, *here.parents):
            if os.path.lexists(candidate / CONFIG_NAME):
                return candidate
    return None


# --- experiment specs ------------------------------------------------------------------------


def is_spec_name(name: str) -> bool:
    """A *.yaml file name (".yaml" alone is none)."""
    return len(name) > len(SPEC_SUFFIX) and name.endswith(SPEC_SUFFIX)


def experiment_path(argument: str, cwd: Path | None = None) -> Path:
    """What a command that takes one experiment means by ARGUMENT: an existing path is that
    file; otherwise a bare name (no `/`, no suffix) is `experiments/<name>.yaml` of the
    repository around cwd. Anything else is returned as given, for the reader to refuse with
    its own message (no such file, a folder, a link out...)."""
    if not argument.strip():  # Path("") is ".", the whole folder: not what was meant
        raise OptionsError("the experiment is empty: give its name or its spec file")
    path = Path(argument)
    if os.path.lexists(path) or "/" in argument or os.sep in argument or path.suffix:
        return path
    root = find_root(cwd=cwd)
    candidate = (root or Path(cwd or Path.cwd())) / EXPERIMENTS_DIR / f"{argument}{SPEC_SUFFIX}"
    if os.path.lexists(candidate):
        return candidate
    where = (f" (not inside a tfgen repository: no {CONFIG_NAME} here or above)" if root is None
             else f" in {shown(root / EXPERIMENTS_DIR)}/")
    raise OptionsError(f"{argument}: no such file, and no experiment of that name{where} "
                       f"(give a spec file or the name of an experiments/<name>.yaml)")


def spec_in_repository(root: Path, path: Path, argument: str) -> str:
    """The repository-relative `experiments/<name>.yaml` that `path` (what `argument` named)
    is, or OptionsError: a command that changes or removes a spec touches nothing else (not a
    file outside the repository, not another folder's YAML)."""
    absolute = os.path.normpath(os.path.join(os.getcwd(), str(path)))
    inside = _inside(absolute, os.path.normpath(str(root)))
    folder, _, name = (inside or "").replace(os.sep, "/").rpartition("/")
    if inside is None or folder != EXPERIMENTS_DIR or not is_spec_name(name):
        raise OptionsError(f"{argument!r} is not a spec file in {EXPERIMENTS_DIR}/ of this "
                           f"repository; give the experiment's name")
    return f"{EXPERIMENTS_DIR}/{name}"


def run_folder(root: Path, name: str) -> Path:
    """Where `tfgen run-local` keeps an experiment's data by default: `.tfgen-run/<name>/`."""
    return root / LOCAL_RUN_DIR / name


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """A folder, or a link to one; False for a link that loops or dangles (the reader says so)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _looks_like_yaml(name: str) -> bool:
    return name.lower().endswith(YAML_SUFFIXES)


def spec_files(directory: Path) -> list[Path]:
    """The experiment specs in a folder: every *.yaml entry in it (not in sub-folders), sorted
    by name, as absolute paths with symlinks kept (the reader judges where they lead, and a
    pipe or a folder named *.yaml is refused by it, not skipped); empty when the folder does
    not exist."""
    try:
        with os.scandir(directory) as entries:
            names = sorted(entry.name for entry in entries if is_spec_name(entry.name))
    except (FileNotFoundError, NotADirectoryError):
        return []
    base = Path(os.path.abspath(directory))
    return [base / name for name in names]


def holds_specs(directory: Path) -> bool:
    """Whether a folder holds an experiment spec (`spec_files` is not empty), found without
    listing all ten thousand."""
    try:
        with os.scandir(directory) as entries:
            return any(is_spec_name(entry.name) for entry in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def misplaced_specs(directory: Path) -> list[Problem]:
    """What looks like an experiment spec in a folder but is not read as one: YAML files
    spelled otherwise than *.yaml, and sub-folders holding YAML files."""
    problems: list[Problem] = []
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return problems
    for entry in entries:
        if _is_dir(entry):
            if _holds_yaml(entry.path):
                problems.append(Problem(
                    shown(entry.path) + "/",
                    message="a folder of YAML files: specs are read only from *.yaml files "
                            "directly in experiments/",
                    hint=f"move each spec up to {EXPERIMENTS_DIR}/<name>.yaml, or the folder "
                         f"out of {EXPERIMENTS_DIR}/"))
        elif _looks_like_yaml(entry.name) and not is_spec_name(entry.name):
            stem = entry.name[: entry.name.rfind(".")]
            problems.append(Problem(
                shown(entry.path),
                message=f"not read: experiment specs are *{SPEC_SUFFIX} files",
                hint=f"rename it to {stem or '<name>'}{SPEC_SUFFIX}"))
    return problems


def _holds_yaml(directory: str, budget: int = 1000) -> bool:
    """Whether a folder holds a YAML file at any depth (at most `budget` entries looked at;
    symlinked folders not entered)."""
    pending = [directory]
    while pending and budget > 0:
        try:
            with os.scandir(pending.pop()) as scan:
                for entry in scan:
                    budget -= 1
                    if _looks_like_yaml(entry.name) and not _is_dir(entry):
                        return True
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue
    return False


def discover(paths: Iterable[Path | str]) -> tuple[list[Path], list[Problem]]:
    """Spec files from paths a person gave: files as given, folders' specs (`spec_files`);
    a folder without specs, what looks like a spec there (`misplaced_specs`) and a missing
    path are problems. Files come absolute (symlinks kept), once each."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = spec_files(path)
            misplaced = misplaced_specs(path)
            if not found and not misplaced:
                problems.append(Problem(shown(path),
                                        message=f"no *{SPEC_SUFFIX} experiment files here"))
            problems += misplaced
            files += found
        elif os.path.lexists(path):
            files.append(Path(os.path.abspath(path)))
        else:
            problems.append(Problem(shown(path), message="no such file or directory"))
    return list(dict.fromkeys(files)), problems


def spec_rel(name: str) -> str:
    """experiments/<name>.yaml: the spec of an experiment, repository-relative."""
    return f"{EXPERIMENTS_DIR}/{name}{SPEC_SUFFIX}"


def experiment_of(rel: str) -> str | None:
    """The experiment a repository-relative path belongs to (its spec or its generated folder),
    None for a path that belongs to none."""
    if rel.startswith(GENERATED_DIR + "/"):
        return rel.split("/")[2]
    folder, _, name = rel.rpartition("/")
    if folder == EXPERIMENTS_DIR and is_spec_name(name):
        return name[: -len(SPEC_SUFFIX)]
    return None


def files_of(names: Collection[str], rels: Iterable[str]) -> list[str]:
    """The paths among `rels` that belong to these experiments (`experiment_of`)."""
    starts = tuple(f"{folder}/{name}" for name in names
                   for folder in (GENERATED_DIR, EXPERIMENTS_DIR))
    return [rel for rel in rels if rel.startswith(starts) and experiment_of(rel) in names]


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


def generated_paths(name: str) -> tuple[str, str]:
    """The files `tfgen render` writes for one experiment: its chart values and its
    ApplicationSet generator input."""
    folder = generated_folder(name)
    return f"{folder}/{VALUES_FILE}", f"{folder}/{APP_FILE}"


def is_temp_name(name: str) -> bool:
    """A file tfgen's writer is writing (or was, when it was killed): see TEMP_MARK."""
    return name.startswith(".") and TEMP_MARK in name


def is_generated_location(rel: str) -> bool:
    """Where tfgen writes: argo/*.yaml, anything below argo/experiments/ and
    .github/CODEOWNERS (never a file still being written)."""
    if rel == CODEOWNERS_FILE:
        return True
    folder, _, name = rel.rpartition("/")
    if is_temp_name(name):
        return False
    if rel.startswith(GENERATED_DIR + "/"):
        return True
    return folder == ARGO_DIR and name.endswith(".yaml")


def generated_files(root: Path) -> dict[str, bytes]:
    """Every file where tfgen writes (`is_generated_location`), repository-relative POSIX path
    -> bytes, as rendering compares against them; the tree checked first
    (`check_generated_tree`), each file read through the safe reader.
    """
    check_generated_tree(root)
    found: dict[str, bytes] = {}
    for entry in _entries(root / ARGO_DIR):
        rel = f"{ARGO_DIR}/{entry.name}"
        if is_generated_location(rel):
            found[rel] = read_input(entry.path, shown(entry.path), root)
    _read_below(root, GENERATED_DIR, found)
    codeowners = root / CODEOWNERS_FILE
    if os.path.lexists(codeowners):
        found[CODEOWNERS_FILE] = read_input(codeowners, shown(codeowners), root)
    return found


def check_generated_tree(root: Path) -> None:
    """Refuse (`Refused`, one line) what would make a write in argo/ go astray: a file or a
    link where tfgen writes a folder (argo/, argo/experiments/, .github/, a symlinked
    experiment folder:
    a write through it would leave the repository), a folder where it writes a file."""
    for rel in (ARGO_DIR, GENERATED_DIR, CODEOWNERS_FOLDER):
        _expect_folder(root, rel)
    if (root / CODEOWNERS_FILE).is_dir():
        raise Refused(shown(root / CODEOWNERS_FILE), "is a folder, where tfgen writes a file",
                      "move it away, then run `tfgen render`")
    for entry in _entries(root / ARGO_DIR):
        if is_generated_location(f"{ARGO_DIR}/{entry.name}") and _is_dir(entry):
            raise Refused(shown(entry.path), "is a folder, where tfgen writes a file",
                          "move it away, then run `tfgen render`")
    for entry in _entries(root / GENERATED_DIR):
        if entry.is_symlink() and _is_dir(entry):
            _expect_folder(root, f"{GENERATED_DIR}/{entry.name}")


def _expect_folder(root: Path, rel: str) -> None:
    path = root / rel
    if os.path.islink(path):
        raise Refused(shown(path), "is a symbolic link, where tfgen writes a real folder",
                      "remove the link, then run `tfgen render`")
    if os.path.lexists(path) and not path.is_dir():
        raise Refused(shown(path), "is a file, where tfgen writes a folder",
                      "move it away, then run `tfgen render`")


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise Refused(shown(directory), f"cannot list: {exc.strerror or exc}") from None


def _read_below(root: Path, rel: str, found: dict[str, bytes]) -> None:
    for entry in _entries(root / rel):
        child = f"{rel}/{entry.name}"
        if entry.is_symlink() and _is_dir(entry):
            _expect_folder(root, child)  # refused: writing through it would leave argo/
        elif entry.is_dir(follow_symlinks=False):
            _read_below(root, child, found)
        elif is_generated_location(child):
            found[child] = read_input(entry.path, shown(entry.path), root)


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
