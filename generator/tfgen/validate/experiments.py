"""The validate stage's way in: experiment files -> validated Experiments, and every problem
of every file at once.

Each file is read strictly (`yaml/`), laid over tfgen.yaml's defaults (`config/`), checked
against the schema and completed with the schema's defaults (`schema/`), then checked by the
rules a schema cannot express (`rules/`, `policy/`); the rules across files (`across/`) run
over all of them. `validate_paths` is the one way in: `tfgen validate`, `render`, `explain` and
`check` all come through it. `check` hands it a memory of earlier verdicts (`Verdicts`), so a
file whose bytes did not change is not checked again; the rules across files always run.
What it gives back (`ValidationResult`, `Experiment`) is in `result`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..problems import Problem, errors_of, warnings_of
from ..repo import layout
from ..repo.files import CHANGED_WHILE_READ, Changed
from .across.names import repo_problems
from .across.objectnames import name_clash_problems
from .config.load import RepoConfig, load_config
from .experiment import sweep
from .experiment.checked import across_files, lookup
from .policy import pods, team
from .result import Experiment, OnMeasured, SpecVerdict, ValidationResult, Verdicts, given
from .rules import capacity, cluster, process, queues, runtime, valuesfile
from .rules.spec import Checked, semantic_problems
from .rules.sweep import sweep_problems
from .schema.defaults import apply_defaults, merge_defaults
from .schema.validator import schema_check
from .yaml.document import Locator, PointerParts
from .yaml.loader import LoadError, load_bytes, read_file


def check_file(
    path: Path, shown: str, raw: bytes, config: RepoConfig
) -> tuple[Checked | None, list[Problem]]:
    """Load and validate one file's bytes: (the checked experiment or None, its problems)."""
    try:
        document = load_bytes(raw, shown)
    except LoadError as exc:
        return None, [exc.problem()]
    # The loaded data is used only here: the merge takes it over instead of copying it, and
    # the defaults are then filled in without another copy.
    merged = _merged(document.data, config)
    found = schema_check(document, merged, config=config.document)
    problems = found.problems
    complete = apply_defaults(merged, in_place=True)
    renamed: tuple[tuple[PointerParts, PointerParts], ...] = ()
    if found.misspelt:
        # The rules below judge the spec as meant: a misspelt key (`tensorbord:`) is said by
        # the schema once, not again by every rule that misses the key it meant.
        meant = load_bytes(raw, shown).data
        renamed = _as_meant(meant, found.misspelt)
        complete = apply_defaults(_merged(meant, config), in_place=True)
    locator = Locator(document, config.document, renamed)
    checked = Checked(path, shown, complete, raw, config.document, _locator=locator)
    # The values file is measured only on a spec the schema accepts (its runs are built as
    # render builds them); a sweep too large to write is not then judged run by run.
    measured = valuesfile.Measured([]) if problems else valuesfile.measure(checked, config)
    checked.values_digest, too_large = measured.digest, measured.problems
    too_long = [] if problems else process.process_problems(
        checked, config.cluster_domain,
        each_run=not too_large and sweep.run_count(checked.data["spec"]) <= config.max_runs)
    problems += (semantic_problems(checked, config.namespaces,
                                     config.data["argocd"]["namespace"])
                 + team.namespace_policy_problems(checked, config)
                 + cluster.cluster_problems(checked, config)
                 + capacity.fit_problems(checked, config)
                 + queues.queue_problems(checked, config)
                 + pods.pod_level_problems(checked, config)
                 + runtime.runtime_problems(checked, config)
                 + sweep_problems(checked, config.max_runs, each_run=not too_large)
                 + too_large + too_long)
    checked._locator = None  # rebuilt from `raw` if a rule across files points into the file
    return checked, problems


def _merged(data: Any, config: RepoConfig) -> Any:
    """A spec's data with tfgen.yaml's defaults under it (taking `data` over)."""
    own_spec = data.get("spec") if isinstance(data, dict) else None
    return merge_defaults(config.spec_defaults(_namespace(data, config), own_spec), data,
                          own_spec=True)


def _as_meant(data: Any, misspelt: Sequence[tuple[PointerParts, str, str]]
              ) -> tuple[tuple[PointerParts, PointerParts], ...]:
    """Rename in `data`, in place, each misspelt key to the key meant, where the spec (not a
    tfgen.yaml default) wrote it and does not write the key meant too; the renames made, as
    (pointer as meant, as written)."""
    renamed = []
    for parts, written, meant in misspelt:
        mapping = data
        for part in parts:
            if isinstance(mapping, dict):
                mapping = mapping.get(part)
            elif isinstance(mapping, list) and isinstance(part, int) and part < len(mapping):
                mapping = mapping[part]
            else:
                mapping = None
        if isinstance(mapping, dict) and written in mapping and meant not in mapping:
            entries = {meant if key == written else key: value
                       for key, value in mapping.items()}
            mapping.clear()
            mapping.update(entries)
            renamed.append(((*parts, meant), (*parts, written)))
    return tuple(renamed)


def _namespace(data: Any, config: RepoConfig) -> object:
    """The namespace a spec will have once tfgen.yaml's defaults are under it."""
    own = lookup(data, "metadata", "namespace")
    return own if own is not None else lookup(config.defaults, "metadata", "namespace")


def _check(
    path: Path, shown: str, config: RepoConfig, known: SpecVerdict | None,
    verdicts: Verdicts | None,
) -> tuple[Checked | None, list[Problem]]:
    """One file: its verdict when `known` (recalled: its content was judged before), else
    checked now and remembered in `verdicts`."""
    if known is not None:
        return _recalled(path, shown, config, known), list(known.problems)
    try:
        raw = read_file(path, shown, config.root)
    except LoadError as exc:
        return None, [exc.problem()]
    item, problems = check_file(path, shown, raw, config)
    if verdicts is None:
        return item, problems
    data = item.data if item else None
    # From here on the file is held as a recalled one: what the rules across files read, the
    # rest in the cache, so a run does not hold ten thousand complete specs at once.
    kept = verdicts.remember(path, shown, raw, SpecVerdict(
        tuple(problems), across_files(data) if data else None, given(data),
        item.values_digest if item else None))
    return _recalled(path, shown, config, kept), problems


def _recalled(path: Path, shown: str, config: RepoConfig, known: SpecVerdict) -> Checked | None:
    """A file as its remembered verdict gives it: what the rules across files read, with its
    bytes read (for a problem's line) and its complete data loaded when asked for."""
    if known.facts is None:
        return None
    checked = facts_checked(path, shown, known.facts, config, known.load_data)
    checked.values_digest = known.values_digest
    return checked


def facts_checked(
    path: Path, shown: str, facts: dict[str, Any], config: RepoConfig,
    remembered: Callable[[], dict[str, Any] | None] | None = None,
) -> Checked:
    """A spec file as the rules across files see it from what they read of it (`facts`):
    its bytes are read only for a problem's line; with the `remembered` complete data, that
    data is loaded when asked for."""
    read = functools.partial(read_file, path, shown, config.root)
    load = (functools.partial(_recalled_data, remembered, path, shown, read, config)
            if remembered is not None else None)
    return Checked(path, shown, facts, config=config.document, read=read, load=load)


def across_problems(experiments: Sequence[Checked], config: RepoConfig,
                    focus: Collection[str] | None = None) -> list[Problem]:
    """The rules across files: unique names and volumes, log folders, the names of the objects
    the experiments render, each namespace's GPU quota; a clash of names, volumes or log
    folders and a quota exceeded are reported on the files being added or changed (`focus`,
    shown paths) where the caller knows them."""
    return (repo_problems(experiments, focus)
            + name_clash_problems(experiments, config.max_runs)
            + team.quota_problems(experiments, config, focus))


def _recalled_data(
    remembered: Callable[[], dict[str, Any] | None], path: Path, shown: str,
    read: Callable[[], bytes], config: RepoConfig,
) -> dict[str, Any]:
    """A recalled file's complete data: `remembered`, else (the cache lost it) worked out
    again from the file, which must still be a valid spec. (Not the verdict: what the rules
    across files read of it is not held once they have run.)"""
    data = remembered()
    if data is None:
        checked, problems = check_file(path, shown, read(), config)
        if checked is None or errors_of(problems):
            raise Changed(shown, CHANGED_WHILE_READ, "run tfgen again")
        data = checked.data
    return data


@runtime_checkable
class Surroundings(Protocol):
    """The repository's other experiments as a caller already knows them, for the rules
    across files (a check of the experiments changed since an all-clear check knows the
    others as that check left them)."""

    def around(self, checked: Sequence[Checked]) -> Iterable[Checked]:
        """The experiments the `checked` files are compared with: none when the rules across
        files cannot find anything new among them."""


def _context(files: Sequence[Path], config: RepoConfig, others: Iterable[Path]) -> list[Checked]:
    """The repository's other experiments, checked only so rules across files can see them
    (their own problems are theirs to report)."""
    given = set(files)
    context = [_check(path, layout.shown(path), config, None, None)[0]
               for path in others if path not in given]
    return [item for item in context if item is not None]


def validate_paths(
    paths: Sequence[Path | str],
    config: RepoConfig,
    context: Iterable[Path] | Surroundings = (),
    verdicts: Verdicts | None = None,
    focus: Collection[str] | None = None,
    measured: OnMeasured | None = None,
) -> ValidationResult:
    """Validate spec files and folders against the schema and every rule.

    Reports every problem of every file (unreadable files give one problem each) and returns
    the experiments of the files without problems, in file order. `context` are further spec
    files that rules across files (unique names) compare against without reporting on them:
    checking one new file still catches a name another experiment already uses; or the
    `Surroundings` that knows them already. `focus` (shown paths) are the files a change adds
    or alters: a clash between files, or a quota exceeded, is reported on them (given context
    files, the given files are the focus). `measured` hears of each values file as its spec
    is measured (`OnMeasured`).
    """
    files, discovered = layout.discover(paths)
    own = _OwnChecks.of(files, config, verdicts, measured)
    across = _across_found(own.checked, files, config, context, focus)
    invalid = own.failing(across)
    valid = [c for c in own.checked if c.source not in invalid]
    return ValidationResult(
        experiments=[Experiment.of(c.source, c.shown, layout.relative(config.root, c.source),
                                   c.data, c.load, c.values_digest) for c in valid],
        # A bad tfgen.yaml default is found once per spec at the same place: report it once.
        problems=sorted({*discovered, *own.problems, *across}),
        files=files, config=config, invalid_files=len(invalid),
        not_specs=len({p.path for p in discovered}), facts={c.shown: c.data for c in valid},
        warnings={c.shown: own.warnings[c.shown] for c in valid if c.shown in own.warnings},
    )


@dataclass
class _OwnChecks:
    """What each file's own checks gave (the warnings: of the files without an error)."""

    checked: list[Checked] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Counted per spec file: a problem located in tfgen.yaml (a bad default) still fails the spec.
    invalid: set[Path] = field(default_factory=set)
    warnings: dict[str, tuple[Problem, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, files: Sequence[Path], config: RepoConfig, verdicts: Verdicts | None,
           measured: OnMeasured | None = None) -> _OwnChecks:
        """Each file on its own, in file order: recalled when `verdicts` knows its content."""
        own = cls()
        named = [(path, layout.shown(path)) for path in files]
        known = verdicts.recall(named) if verdicts else [None] * len(files)
        for (path, name), verdict in zip(named, known, strict=True):
            item, found = _check(path, name, config, verdict, verdicts)
            if measured and item is not None and item.values_digest is not None:
                measured(layout.generated_paths(str(item.data["metadata"]["name"]))[0],
                         item.values_digest)
            own.problems += found
            if errors_of(found):
                own.invalid.add(path)
            elif item is not None and (warned := warnings_of(found)):
                own.warnings[name] = tuple(warned)
            if item is not None:
                own.checked.append(item)
        return own

    def failing(self, across: Sequence[Problem]) -> set[Path]:
        """The files that fail: an error of their own, or one the rules across files report."""
        shown = {p.path for p in across}
        return self.invalid | {c.source for c in self.checked if c.shown in shown}


def _across_found(checked: list[Checked], files: Sequence[Path], config: RepoConfig,
                  context: Iterable[Path] | Surroundings,
                  focus: Collection[str] | None) -> list[Problem]:
    """What the rules across files report on the `checked` files among their `context`."""
    mine = {c.shown for c in checked}
    if surrounded := isinstance(context, Surroundings):
        others = list(context.around(checked))
    else:
        others = _context(files, config, context)
        if others and focus is None:
            focus = mine
    # Checked context files have problems of their own to report; known surroundings have
    # none, so whatever the rules find among them now is the given files' doing.
    return [p for p in across_problems([*checked, *others], config, focus)
            if p.path in mine or surrounded]


def repository_specs(config: RepoConfig) -> list[Path]:
    """What a repository-wide command validates: its experiments/ folder, or nothing when that
    folder exists and holds no spec and nothing that looks like one. A repository without
    experiments (just started by `tfgen init`, or its last run deleted) is valid, as render
    takes it; a folder a person names that holds no spec is still a problem."""
    folder = config.experiments_dir
    if folder.is_dir() and not layout.holds_specs(folder) and not layout.misplaced_specs(folder):
        return []
    return [folder]


def validate_repo(
    paths: Sequence[Path | str] = (), cwd: Path | None = None, verdicts: Verdicts | None = None
) -> ValidationResult:
    """Validated Experiments of a repository: what render, check and explain build on.

    Finds the repository root (nearest ancestor of `paths`, else of `cwd`, holding tfgen.yaml),
    loads its config (InputError if tfgen.yaml itself is invalid) and validates `paths`, by
    default `<root>/experiments/`; given paths are checked against the rest of the repository's
    experiments by the rules across files. Each Experiment's `data` has tfgen.yaml defaults and
    every schema default applied.
    """
    config = load_config(paths, cwd)
    if not paths:
        specs = repository_specs(config)
        result = validate_paths(specs, config, verdicts=verdicts)
        result.no_experiments_yet = not specs
        return result
    return validate_paths(paths, config, layout.spec_files(config.experiments_dir), verdicts)
