"""What one pass of the gate works out: the whole repository, or the experiments changed since
the last all-clear check.

The gate has one sequence of stages (`check.Gate.check`); a scope only chooses what they look
at. The whole scope hands every stage every experiment. A scope since a ledger (`ledger`, the
last all-clear check) hands each stage the changed experiments, and the unchanged ones as the
ledger keeps them, for the rules across experiments: their spec facts (names, volumes, log
folders, quotas), their CODEOWNERS lines, their Applications' names and their objects'
identities. An unchanged experiment's own verdict is the ledger's: all clear, with the
warnings the ledger kept of it.

A scope since a ledger only ever answers "all clear": what such a pass finds, the gate says
from a pass over the whole repository, so every problem reads as a full check words it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..problems import Problem
from ..repo import layout
from ..repo.inputs import Inputs
from ..validate import RepoConfig
from ..validate.experiment.checked import Checked
from . import ledger
from .ledger import Entry, Ledger


class Owned(NamedTuple):
    """An experiment as CODEOWNERS lists it."""

    rel: str
    namespace: str


@dataclass(frozen=True)
class Scope:
    """The experiments a pass works out (`changed`; None: all of them) and, for a scope since
    a ledger, the ledger (`before`) that stands for the others."""

    changed: frozenset[str] | None = None
    before: Ledger | None = None
    config: RepoConfig | None = None
    files: tuple[str, ...] = ()  # the changed experiments' files in the run's snapshot
    others: Mapping[str, Entry] = field(default_factory=dict)

    @property
    def whole(self) -> bool:
        return self.changed is None

    def specs(self, config: RepoConfig, every: Sequence[Any]) -> list[Any]:
        """The spec paths to validate: `every` (the repository's), or the changed ones."""
        if self.whole:
            return list(every)
        return [config.root / rel for rel in self.files
                if rel.startswith(f"{layout.EXPERIMENTS_DIR}/")]

    def context(self) -> Scope | tuple[()]:
        """What the rules across spec files compare the scope's specs with: nothing more for
        the whole repository (every spec is in it), else the others (`around`)."""
        return () if self.whole else self

    def around(self, checked: Sequence[Checked]) -> Iterable[Checked]:
        """`validate.Surroundings`: the unchanged experiments' specs, as the rules across files
        read them, unless the changed ones read as the ledger has them (then those rules'
        verdict over all of them is the ledger's: all clear)."""
        if self.before is None or self.config is None:
            return []
        facts = {str(_name(self.config, item)): item.data for item in checked}
        if self.before.same_facts(self.changed or (), facts):
            return []
        return ledger.spec_checks(self.config, self.others)

    def owned(self) -> list[Owned]:
        """The unchanged experiments, as CODEOWNERS lists them."""
        return [Owned(layout.spec_rel(name),
                      str((entry.facts.get("metadata") or {}).get("namespace")))
                for name, entry in self.others.items() if entry.facts is not None]

    def applications(self) -> dict[str, str]:
        """The unchanged experiments' Applications, by name, and where each is generated."""
        return {entry.application: layout.generated_paths(name)[1]
                for name, entry in self.others.items() if entry.application is not None}

    def identities(self) -> dict[str, tuple[str, str]]:
        """The unchanged experiments' objects (`objects.identity_digest`), as
        (their Application's name, where it is generated)."""
        found: dict[str, tuple[str, str]] = {}
        for name, entry in self.others.items():
            if entry.application is not None:  # one owner for all of an experiment's objects
                owner = (entry.application, layout.generated_paths(name)[1])
                found.update(dict.fromkeys(entry.identities, owner))
        return found

    def warnings(self) -> list[Problem]:
        """The unchanged experiments' warnings as the ledger keeps them: a pass since the
        ledger says them as a pass over the whole repository does."""
        return [warning for entry in self.others.values() for warning in entry.warnings]

    def kept(self) -> list[Entry]:
        """The unchanged experiments that have an Application."""
        return [entry for entry in self.others.values() if entry.application is not None]


WHOLE = Scope()


def since(before: Ledger, inputs: Inputs, config: RepoConfig, judged: Collection[str]) -> Scope:
    """The scope since the ledger `before` (the gate has found it standing): the experiments
    whose files differ from it; the whole repository when a file of no experiment differs
    (but those the pass judges itself: `judged`)."""
    changed = before.changed(inputs.hashes, judged)
    if changed is None:
        return WHOLE
    return Scope(frozenset(changed), before, config,
                 tuple(layout.files_of(changed, inputs.hashes)), before.others(changed))


def _name(config: RepoConfig, item: Checked) -> str | None:
    return layout.experiment_of(layout.relative(config.root, item.source))
