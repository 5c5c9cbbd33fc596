"""The last all-clear check, kept so that the next one checks only what changed since.

Recalling each experiment's verdicts from the cache costs tens of microseconds an experiment:
at ten thousand experiments, most of a check after a one-experiment change. So a check that
found no problem (warnings aside) leaves a ledger: the content hash of every input file it
read and, per experiment, what the checks across experiments read of it: what the rules across
spec files read (`validate.across_problems`), the name of its Application and its objects'
identities (two experiments rendering one object collide), with their count; and the warnings
its own checks gave, which a check from the ledger says again as a full check would.

The next check uses the ledger when every file that differs from it belongs to an experiment
(its spec, or a file below argo/experiments/<name>/): its scope (`scope`) is those
experiments, which go through the same stages as in a full check, with the others as the
ledger has them for every rule across experiments. Anything else changed (tfgen.yaml, the
chart, argo/*.yaml, another tfgen, helm or kubeconform build or option: its key) means a full
check, but for CODEOWNERS, which lists every spec: the drift stage judges it again from every
experiment's namespace (`judged`). An unchanged experiment's verdict cannot have changed: its
files are the ones that were all clear, and whatever else its checks read is unchanged too
(kubeconform's verdicts included, by its build in the key). That holds
when each Application reads files of its own experiment only (its values; a ledger is kept
only then: `keeps`) and helm reads the same charts (their digests are kept beside it:
`CheckResult.reads`).

The ledger only ever answers "all clear" (with the unchanged experiments' warnings). Any error
the changed experiments' checks find sends the run to the full check, which says where each
problem is.
"""

from __future__ import annotations

import json
import secrets
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..problems import Problem
from ..render.codeowners import codeowners_file
from ..repo import layout
from ..repo.cache import Cache
from ..repo.keys import CacheKeys
from ..validate import RepoConfig
from ..validate.experiments import Checked, facts_checked
from .argo.applications import ResolvedApplication
from .objects.verdict import AppObjects, identity_digest

SPACE = "ledger"
# The ledger is kept in parts, an experiment's in the part its name falls in: a check that
# changed one experiment writes one part again (and the head), not megabytes.
PARTS = 64


@dataclass(frozen=True)
class Entry:
    """One experiment as the ledger keeps it: what the rules across spec files read of its
    spec (None: no spec), its Application's name (None: none), a short digest of each of
    its objects' identities as the cluster tells them apart (`objects.cluster_identity`; two
    equal digests make the full check look), the objects' count, and the warnings of its own
    checks (an all-clear experiment has no other problem)."""

    facts: dict[str, Any] | None
    application: str | None
    identities: tuple[str, ...]
    objects: int
    warnings: tuple[Problem, ...] = ()

    @classmethod
    def of(cls, facts: dict[str, Any] | None, rendered: AppObjects | None,
           warnings: tuple[Problem, ...] = ()) -> Entry:
        if rendered is None:
            return cls(facts, None, (), 0, warnings)
        return cls(facts, rendered.app.name, identities(rendered), len(rendered.keys),
                   warnings)


def identities(rendered: AppObjects) -> tuple[str, ...]:
    """The digests of an Application's objects' identities."""
    return tuple({identity_digest(key) for key in rendered.keys})


@dataclass
class _Part:
    """The files of the experiments in one part, by their content hash, and their entries;
    `token` names the write that stored it ("": not stored yet)."""

    hashes: dict[str, str] = field(default_factory=dict)
    entries: dict[str, Entry] = field(default_factory=dict)
    token: str = ""


@dataclass
class Ledger:
    """The content hashes of an all-clear check's input files (`common`: the files of no
    experiment), what its Applications read beyond them (`CheckResult.reads`) and its
    experiments, in PARTS parts."""

    common: dict[str, str]
    reads: dict[str, str]
    parts: list[_Part]

    @classmethod
    def of(cls, hashes: Mapping[str, str], reads: dict[str, str],
           entries: Mapping[str, Entry]) -> Ledger:
        ledger = cls({}, reads, [_Part() for _ in range(PARTS)])
        for rel, content in hashes.items():
            name = layout.experiment_of(rel)
            if name is None:
                ledger.common[rel] = content
            else:
                ledger.parts[_part(name)].hashes[rel] = content
        for name, entry in entries.items():
            ledger.parts[_part(name)].entries[name] = entry
        return ledger

    def changed(self, hashes: Mapping[str, str], judged: Collection[str] = ()) -> set[str] | None:
        """The experiments with a file that differs (added, changed or removed) in the
        snapshot `hashes`; None when a file of no experiment differs (but those the caller
        judges itself: `judged`)."""
        before = dict(self.common)
        for part in self.parts:
            before.update(part.hashes)
        differ = {rel for rel, content in hashes.items() if before.get(rel) != content}
        differ.update(before.keys() - hashes.keys())
        names = {layout.experiment_of(rel) for rel in differ.difference(judged)}
        return None if None in names else names  # type: ignore[return-value]

    def entry(self, name: str) -> Entry | None:
        return self.parts[_part(name)].entries.get(name)

    def same_facts(self, changed: Collection[str], facts: Mapping[str, dict[str, Any]]) -> bool:
        """Whether each changed experiment is still there with the facts the ledger has of it
        (`facts`: by name, now), compared as JSON (1 is not 1.0 there)."""
        return set(facts) == set(changed) and all(
            (entry := self.entry(name)) is not None
            and _json(entry.facts) == _json(facts[name]) for name in changed)

    def others(self, changed: Collection[str]) -> dict[str, Entry]:
        """The unchanged experiments, by name."""
        return {name: entry for part in self.parts for name, entry in part.entries.items()
                if name not in changed}

    def update(self, hashes: Mapping[str, str], changed: Collection[str],
               entries: Mapping[str, Entry]) -> None:
        """The `changed` experiments as they are now: their files in the snapshot `hashes`,
        their `entries` (one that is gone has none)."""
        for index in {_part(name) for name in changed}:
            part = self.parts[index]
            part.hashes = {rel: content for rel, content in part.hashes.items()
                           if layout.experiment_of(rel) not in changed}
            part.entries = {name: e for name, e in part.entries.items() if name not in changed}
            part.token = ""
        for rel in layout.files_of(changed, hashes):
            self.parts[_part(layout.experiment_of(rel) or "")].hashes[rel] = hashes[rel]
        for name, entry in entries.items():
            self.parts[_part(name)].entries[name] = entry


def _part(name: str) -> int:
    return zlib.crc32(name.encode("utf-8", "surrogateescape")) % PARTS


def load(cache: Cache, key: str, hashes: Mapping[str, str],
         judged: Collection[str] = ()) -> Ledger | None:
    """The ledger kept under `key`; None when there is none, its parts are not all of one
    write's (a run stopped while writing it), or a file of no experiment it names differs in
    the snapshot `hashes` (then its parts are not even read; `judged`: as in `changed`)."""
    head = cache.get_json(SPACE, key)
    try:
        if any(hashes.get(rel) != content for rel, content in head["common"].items()
               if rel not in judged):
            return None
        stored = cache.get_many(SPACE, [CacheKeys.ledger_part(key, i) for i in range(PARTS)])
        parts = [_load_part(stored[CacheKeys.ledger_part(key, i)]) for i in range(PARTS)]
        if [part.token for part in parts] != head["tokens"]:
            return None
        return Ledger(dict(head["common"]), dict(head["reads"]), parts)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # another shape: a full check writes it again


def _load_part(text: str) -> _Part:
    data = json.loads(text)
    return _Part(dict(data["hashes"]), {
        name: Entry(facts, application, tuple(found), objects,
                    tuple(Problem(**problem) for problem in warned))
        for name, (facts, application, found, objects, warned) in data["entries"].items()},
        str(data["token"]))


def save(cache: Cache, key: str, ledger: Ledger) -> None:
    """Keep the ledger: its parts not stored yet, then the head naming every part's write."""
    for index, part in enumerate(ledger.parts):
        if not part.token:
            part.token = secrets.token_hex(8)
            cache.put_json(SPACE, CacheKeys.ledger_part(key, index), {
                "token": part.token, "hashes": part.hashes,
                "entries": {name: [e.facts, e.application, e.identities, e.objects,
                                   [asdict(p) for p in e.warnings]]
                            for name, e in part.entries.items()}})
    cache.put_json(SPACE, key, {"common": ledger.common, "reads": ledger.reads,
                                "tokens": [part.token for part in ledger.parts]})


def entries(root: Path, facts: Mapping[str, dict[str, Any]], rendered: Iterable[AppObjects],
            warnings: Mapping[str, tuple[Problem, ...]]) -> dict[str, Entry]:
    """Each experiment's entry, from what the rules across spec files read of it (`facts`, by
    name), its Application's rendered objects and its warnings (by name)."""
    real = str(root.resolve())
    objects = {_experiment(real, item.app): item for item in rendered}
    return {name: Entry.of(facts.get(name), objects.get(name), warnings.get(name, ()))
            for name in facts.keys() | objects.keys() if name is not None}


def keeps(root: Path, applications: Iterable[ResolvedApplication]) -> bool:
    """Whether each Application reads its own experiment's files only: its generator file and
    its value files (their real paths) below the experiment's folder. (Its chart is one of
    the ledger's `reads`.)"""
    real = str(root.resolve())
    for app in applications:
        name = _experiment(real, app)
        folder = f"{layout.generated_folder(name)}/" if name else None
        if folder is None or not all(_relative(real, path).startswith(folder)
                                     for path in app.value_files):
            return False
    return True


def judged(config: RepoConfig) -> tuple[str, ...]:
    """The files of no experiment that a check from the ledger judges itself: CODEOWNERS,
    when tfgen.yaml names code owners (it lists every spec)."""
    return (layout.CODEOWNERS_FILE,) if codeowners_file(config.owners, [])[0] else ()


def spec_checks(config: RepoConfig, others: Mapping[str, Entry]) -> list[Checked]:
    """The unchanged experiments' specs as the rules across files see them."""
    checked = []
    for name, entry in others.items():
        if entry.facts is not None:
            path = config.experiments_dir / f"{name}{layout.SPEC_SUFFIX}"
            checked.append(facts_checked(path, layout.shown(path), entry.facts, config))
    return checked


def _json(data: Any) -> str:
    return json.dumps(data, sort_keys=True)


def _experiment(real_root: str, app: ResolvedApplication) -> str | None:
    """The experiment an Application is generated for: the one its generator file is of."""
    return layout.experiment_of(_relative(real_root, app.generator_file))


def _relative(real_root: str, path: Path) -> str:
    text = str(path)
    return text[len(real_root) + 1:] if text.startswith(real_root + "/") else text
