"""What the validate stage gives back and remembers: the valid `Experiment`s, each file's
`SpecVerdict` as a memory of earlier runs keeps it (`Verdicts`), and the `ValidationResult` of
a run with its closing line. `experiments.validate_paths` makes them; every command reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..problems import Problem, errors_of, tally, warnings_of
from ..repo import layout
from ..words import counted
from .config.load import RepoConfig


@dataclass(frozen=True)
class Experiment:
    """A valid experiment: `data` is the whole spec document with repo defaults and every
    schema default applied (a plain dict: apiVersion, kind, metadata, spec). Every key with a
    schema default is present (tensorboard.service and .ingress, runPolicy.schedulingPolicy and
    securityContext at least as `{}`, lists as `[]`). Absent unless written: role-level
    image/command/args (the role inherits the spec-level ones), role cpu/memory (no request),
    runPolicy.activeDeadlineSeconds/backoffLimit, nas.server/mode, tensorboard.logDir when
    TensorBoard is disabled. `spec.storage` holds exactly one of `nas` and `existingClaim`,
    plus `mountPath`.

    `source` is the spec file, `shown` how messages name it, `rel` its repository-relative
    path (what generated files name as their source). `data` is loaded by `load` when asked
    for: a run that remembers most of its experiments in sync needs only their names.
    """

    source: Path
    shown: str
    rel: str
    name: str
    namespace: str
    load: Callable[[], dict[str, Any]] = field(repr=False, compare=False)
    # the content hash of the values file render writes for it, when validate measured the
    # whole file (`valuesfile.Measured`)
    values_digest: str | None = field(default=None, compare=False)

    @classmethod
    def of(cls, source: Path, shown: str, rel: str, data: dict[str, Any],
           load: Callable[[], dict[str, Any]] | None = None,
           values_digest: str | None = None) -> Experiment:
        """An experiment named by `data` (complete, or what the rules across files read),
        whose complete data `load` gives (default: `data` itself)."""
        meta = data["metadata"]
        return cls(source, shown, rel, str(meta["name"]), str(meta["namespace"]),
                   load or given(data), values_digest)

    @property
    def data(self) -> dict[str, Any]:
        """Loaded each time it is asked for (from the cache, for a remembered spec): a run
        over ten thousand experiments does not hold them all. Take it once."""
        return self.load()

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.data["spec"])


@dataclass(frozen=True)
class SpecVerdict:
    """One file's outcome as a cache keeps it: its problems, what the rules across files read
    of it (`checked.across_files`; None when the file could not be loaded), and its complete
    data, given by `load_data` when asked for."""

    problems: tuple[Problem, ...]
    facts: dict[str, Any] | None
    load_data: Callable[[], dict[str, Any] | None] = field(repr=False, compare=False)
    values_digest: str | None = None  # as `Experiment.values_digest`


# Told, as each spec is measured, the values file render writes for it (repository-relative)
# and that file's content hash (`Experiment.values_digest`), whether or not the spec then
# passes the rules across files: the gate's helm batches take it while validate goes on.
OnMeasured = Callable[[str, str], None]


class Verdicts(Protocol):
    """Verdicts remembered by a file's shown path and content (the gate's cache). `recall`
    gives the verdicts of many files (path, shown) at once, and knows their content without
    reading them (the gate's snapshot hashed it): an unchanged spec is not even read."""

    def recall(self, files: Sequence[tuple[Path, str]]) -> list[SpecVerdict | None]: ...

    def remember(self, path: Path, shown: str, raw: bytes, verdict: SpecVerdict) -> SpecVerdict:
        """Keep `verdict`; returns it as `recall` would give it back."""
        ...


@dataclass
class ValidationResult:
    """Outcome of validating some files: valid experiments, every problem, the files seen."""

    experiments: list[Experiment] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    config: RepoConfig | None = None
    invalid_files: int = 0
    not_specs: int = 0  # paths with a problem that are no spec file (missing, misplaced)
    # A repository whose experiments/ is empty (`repository_specs`): valid, nothing to check.
    no_experiments_yet: bool = False
    # What the rules across files read of each valid experiment, by its shown path (given
    # `verdicts`; else its whole data): the gate keeps it for its next run (`gate.ledger`).
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The warnings of each valid experiment's own checks, by its shown path (those of a
    # tfgen.yaml default are located in tfgen.yaml): the gate's ledger keeps them too.
    warnings: dict[str, tuple[Problem, ...]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not errors_of(self.problems) and (bool(self.files) or self.no_experiments_yet)

    @property
    def invalid_names(self) -> set[str]:
        """Experiment names (file stems) of the spec files that did not validate."""
        valid = {e.source for e in self.experiments}
        return {path.name.rpartition(".")[0] for path in self.files if path not in valid}

    def summary(self) -> str:
        """The closing line: "3 problems in 1 of 4 files. Next: ..." or "4 experiments
        valid. Next: ..." (warnings counted apart: "4 experiments valid, 1 warning")."""
        again = "Next: fix them, then run `tfgen validate` again"
        failed = bool(errors_of(self.problems))
        if failed and not self.files:
            return f"{tally(self.problems)}, no experiment files checked. {again}"
        if failed:
            bad, total = self.invalid_files + self.not_specs, len(self.files) + self.not_specs
            return f"{tally(self.problems)} in {bad} of {counted(total, 'file')}. {again}"
        warned = warnings_of(self.problems)
        if warned:
            return (f"{counted(len(self.experiments), 'experiment')} valid, "
                    f"{counted(len(warned), 'warning')}. Next: see to them, then "
                    "`tfgen render`, then open a pull request")
        if not self.files and self.no_experiments_yet:
            return "no experiments yet. Next: add one with `tfgen new NAME`"
        if not self.files:
            return (f"no experiment files found. Next: write one as "
                    f"{layout.EXPERIMENTS_DIR}/<name>{layout.SPEC_SUFFIX}")
        return (f"{counted(len(self.experiments), 'experiment')} valid. Next: `tfgen render`, "
                "then open a pull request")


def given(data: Any) -> Callable[[], Any]:
    """A `load` that gives `data` itself (for `Experiment.load`, `SpecVerdict.load_data`)."""
    return lambda: data  # the data alone: not the checked file's bytes and locator
