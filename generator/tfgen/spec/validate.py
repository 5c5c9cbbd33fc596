"""Validation of experiment files: loader + repo defaults + schema + rules, over many files.

`validate_paths` checks files (directories contribute their `*.yaml`/`*.yml`) and returns every
problem of every file at once together with the Experiments that passed. `validate_repo` is the
entry point for other commands (render, check, explain): it finds the repository root and its
tfgen.yaml and validates `experiments/` (or the given paths).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..problems import Problem
from .config import RepoConfig, load_config, merge_defaults
from .loader import LoadError, Locator, load_file
from .rules import Checked, file_problems, repo_problems
from .schema import apply_defaults, schema_problems

SPEC_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Experiment:
    """A valid experiment: `data` is the whole spec document with repo defaults and every
    schema default applied (a plain dict: apiVersion, kind, metadata, spec); `source` is the
    file it came from. Every key with a schema default is present (tensorboard.service and
    .ingress, runPolicy.schedulingPolicy and securityContext at least as `{}`, lists as `[]`).
    Absent unless written: role-level image/command/args (the role inherits the spec-level
    ones), role cpu/memory (no request), runPolicy.activeDeadlineSeconds/backoffLimit,
    nas.mode, tensorboard.logDir when TensorBoard is disabled. `spec.storage` holds exactly one
    of `nas` and `existingClaim`, plus `mountPath`.
    """

    source: Path
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.data["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.data["metadata"]["namespace"])

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self.data["metadata"])

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.data["spec"])


@dataclass
class ValidationResult:
    """Outcome of validating some files: valid experiments, every problem, the files seen."""

    experiments: list[Experiment] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    config: RepoConfig | None = None
    invalid_files: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and bool(self.files)

    def summary(self) -> str:
        """One line: "3 problems in 1 of 4 files" or "4 experiments valid"."""
        if self.problems and not self.files:
            n = len(self.problems)
            return f"{n} problem{'s' if n != 1 else ''}, no experiment files checked"
        if self.problems and self.files:
            n, bad, total = len(self.problems), self.invalid_files, len(self.files)
            return (
                f"{n} problem{'s' if n != 1 else ''} in {bad} of {total} "
                f"file{'s' if total != 1 else ''}"
            )
        if not self.files:
            return "no experiment files found"
        n = len(self.experiments)
        return f"{n} experiment{'s' if n != 1 else ''} valid"


def display_path(path: Path) -> str:
    """A path as people should see it: relative to the working directory when inside it."""
    if not path.is_absolute():
        return str(path)
    try:
        # getcwd() is already physical on POSIX; resolving it per file costs syscalls.
        return str(path.relative_to(os.getcwd()))
    except ValueError:
        return str(path)


def is_spec_name(name: str) -> bool:
    """A *.yaml/*.yml file name (as Path(name).suffix sees it: ".yaml" alone has no suffix)."""
    dot = name.rfind(".")
    return 0 < dot < len(name) - 1 and name[dot:] in SPEC_SUFFIXES


def spec_files(directory: Path) -> list[Path]:
    """The *.yaml/*.yml files directly in `directory`, resolved, sorted by name.

    One directory listing and one `resolve` for the directory: an entry that is not a
    symlink resolves to the resolved directory plus its name.
    """
    base = directory.resolve()
    found: list[Path] = []
    with os.scandir(directory) as entries:
        chosen = sorted(
            (entry.name, entry)
            for entry in entries
            if is_spec_name(entry.name) and entry.is_file()
        )
    for name, entry in chosen:
        found.append(Path(entry.path).resolve() if entry.is_symlink() else base / name)
    return found


def discover(paths: Iterable[Path | str]) -> tuple[list[Path], list[Problem]]:
    """Spec files from paths: files as given, directories' *.yaml/*.yml (sorted, not recursive)."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = spec_files(path)
            if not found:
                problems.append(
                    Problem(display_path(path), message="no *.yaml experiment files here")
                )
            files += found
        elif path.exists():
            files.append(path.resolve())
        else:
            problems.append(Problem(display_path(path), message="no such file or directory"))
    cwd = Path.cwd().resolve()
    # Shown relative to the working directory when inside it; worked out once per folder.
    folders: dict[Path, Path | None] = {}
    shown: list[Path] = []
    for file in dict.fromkeys(files):
        folder = file.parent
        if folder not in folders:
            inside = folder == cwd or folder.is_relative_to(cwd)
            folders[folder] = Path(os.path.relpath(folder, cwd)) if inside else None
        relative = folders[folder]
        shown.append(file if relative is None else relative / file.name)
    return shown, problems


def check_file(path: Path, config: RepoConfig) -> tuple[Checked | None, list[Problem]]:
    """Load and validate one file: (the checked experiment or None if unreadable, problems)."""
    shown = display_path(path)
    try:
        document = load_file(path, display=shown)
    except LoadError as exc:
        return None, [Problem(exc.path, exc.line, exc.col, "", exc.reason, exc.hint)]
    # The loaded data is used only here: the merge takes it over instead of copying it, and
    # the defaults are then filled in without another copy.
    merged = merge_defaults(config.defaults, document.data, own_spec=True)
    problems = schema_problems(document, merged, config=config.document)
    complete = apply_defaults(merged, in_place=True)
    checked = Checked(source=path, data=complete, locator=Locator(document, config.document))
    problems += file_problems(checked, config.namespaces)
    return checked, problems


def _context(files: Sequence[Path], config: RepoConfig, others: Sequence[Path]) -> list[Checked]:
    """The repository's other experiments, loaded only so cross-file rules can see them."""
    if not others:
        return []
    given = {f.resolve() for f in files}
    context: list[Checked] = []
    for path in others:
        if path.resolve() in given:
            continue
        try:
            document = load_file(path, display=display_path(path))
        except LoadError:
            continue  # its own validation reports it
        merged = merge_defaults(config.defaults, document.data, own_spec=True)
        data = apply_defaults(merged, in_place=True)
        context.append(Checked(source=path, data=data, locator=Locator(document, config.document)))
    return context


def validate_paths(
    paths: Sequence[Path | str], config: RepoConfig, context: Sequence[Path] = ()
) -> ValidationResult:
    """Validate spec files and directories against the schema and every rule.

    Reports every problem of every file (unreadable files give one problem each) and returns
    the experiments of the files without problems, in file order. `context` are further spec
    files that cross-file rules (unique names) compare against without reporting on them:
    checking one new file still catches a name another experiment already uses.
    """
    files, problems = discover(paths)
    checked: list[Checked] = []
    # Counted per spec file: a problem located in tfgen.yaml (a bad default) still fails the spec.
    invalid: set[Path] = set()
    for path in files:
        item, found = check_file(path, config)
        problems += found
        if found:
            invalid.add(path)
        if item is not None:
            checked.append(item)
    others = _context(files, config, context)
    mine = {c.locator.document.path for c in checked}
    across = [p for p in repo_problems([*checked, *others]) if p.path in mine]
    problems += across
    shown = {p.path for p in across}
    invalid |= {c.source for c in checked if c.locator.document.path in shown}
    experiments = [
        Experiment(source=c.source, data=c.data) for c in checked if c.source not in invalid
    ]
    # A bad tfgen.yaml default is found once per spec at the same place: report it once.
    return ValidationResult(
        experiments=experiments,
        problems=sorted(set(problems)),
        files=files,
        config=config,
        invalid_files=len(invalid),
    )


def validate_repo(paths: Sequence[Path | str] = (), cwd: Path | None = None) -> ValidationResult:
    """Validated Experiments of a repository: what render, check and explain build on.

    Finds the repository root (nearest ancestor of `paths`, else of `cwd`, holding tfgen.yaml),
    loads its config (InputError if tfgen.yaml itself is invalid) and validates `paths`, by
    default `<root>/experiments/`. Use it as::

        result = validate_repo()
        if result.problems:            # report with report.format_problems, then stop
            ...
        for experiment in result.experiments:
            experiment.name, experiment.namespace, experiment.data["spec"], experiment.source

    Each Experiment's `data` has tfgen.yaml defaults and every schema default applied.
    """
    config = load_config(paths, cwd)
    targets = list(paths) or [config.experiments_dir]
    context: list[Path] = []
    if paths and config.experiments_dir.is_dir():
        context = sorted(p for p in config.experiments_dir.iterdir() if p.suffix in SPEC_SUFFIXES)
    return validate_paths(targets, config, context)
