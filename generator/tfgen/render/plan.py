"""Rendering: Experiments -> the generated files in argo/, planned in memory.

`plan_render` computes every file tfgen wants (per experiment: chart values and the
ApplicationSet generator input; once: the argo/ wiring from tfgen.yaml and, when it declares
owners, .github/CODEOWNERS) and compares it with the
committed files, returning a plan of file changes without writing anything. The committed files
are read from disk, or handed in by the gate, which has read them already. `tfgen render
--check` and `tfgen check` stop at the plan (its drift); `write.apply_plan` writes it. A file
without tfgen's header is never overwritten or deleted: it is reported instead.
"""

from __future__ import annotations

import difflib
import functools
import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EnvironmentProblem
from ..problems import Problem, errors_of, warnings_of
from ..repo import layout, naming
from ..repo.inputs import Subset
from ..repo.keys import content_hash
from ..validate import (
    Experiment,
    RepoConfig,
    builtin_config,
    experiment_cluster,
    load_config,
    validate_paths,
)
from ..validate.rules.values import repo_values
from . import argo
from .codeowners import Owned, codeowners_file
from .generated import GeneratedFile, dump_yaml, is_generated

if TYPE_CHECKING:
    from .insync import Memory

CREATE, UPDATE, UNCHANGED, ORPHAN, FOREIGN = "create", "update", "unchanged", "orphan", "foreign"
ACTIONS = (CREATE, UPDATE, UNCHANGED, ORPHAN, FOREIGN)
RENDER_HINT = "run `tfgen render` and commit the result"
# What each kind of drift means for a committed file, as `tfgen check` says it, and the
# render that mends it (a plain render leaves files no spec generates in place).
DRIFT_WORDS = {CREATE: "missing", UPDATE: "out of date", ORPHAN: "left over (no spec generates it)"}
DRIFT_HINTS = {CREATE: RENDER_HINT, UPDATE: RENDER_HINT,
               ORPHAN: "run `tfgen render --prune` and commit the result"}


@dataclass(frozen=True)
class FileChange:
    """One generated path and what rendering would do to it.

    `new` is the wanted content (None for orphans), `old` what is on disk (None if absent);
    both are None for an unchanged file.
    """

    path: str
    action: str
    new: str | None
    old: str | None
    sources: tuple[str, ...] = ()

    def diff(self) -> str:
        """Unified diff from the committed file to the generated one (git-style labels)."""
        old_label = f"a/{self.path}" if self.old is not None else "/dev/null"
        new_label = f"b/{self.path}" if self.new is not None else "/dev/null"
        return "".join(
            difflib.unified_diff(
                (self.old or "").splitlines(keepends=True),
                (self.new or "").splitlines(keepends=True),
                old_label,
                new_label,
            )
        )


@dataclass
class RenderPlan:
    """Every generated path, what would change, and the problems found while planning."""

    root: Path
    changes: list[FileChange]
    problems: list[Problem] = field(default_factory=list)
    experiments: int = 0  # how many experiments the files are for
    # told what `write.apply_plan` wrote (path -> content), by a planner that remembers it
    on_written: Callable[[Mapping[str, str]], None] | None = field(default=None, repr=False)

    def by_action(self, action: str) -> list[FileChange]:
        return [c for c in self.changes if c.action == action]

    def counts(self) -> dict[str, int]:
        return {action: len(self.by_action(action)) for action in ACTIONS}

    @property
    def drift(self) -> list[FileChange]:
        """Changes that make the committed tree differ from what tfgen generates."""
        return [c for c in self.changes if c.action in (CREATE, UPDATE, ORPHAN)]

    @property
    def updates(self) -> dict[str, str]:
        """The committed files a render would rewrite, each with what it would write, by
        repository-relative path."""
        return {c.path: c.new for c in self.by_action(UPDATE) if c.new is not None}

    @property
    def unsettled(self) -> set[str]:
        """The paths whose committed file is not the one tfgen writes (drift, or a file tfgen
        did not write)."""
        return {c.path for c in self.changes if c.action != UNCHANGED}

    def diff(self) -> str:
        return "".join(change.diff() for change in self.drift)


def experiment_files(
    experiment: Experiment, config: RepoConfig | None = None, *, values: bool = True
) -> list[GeneratedFile]:
    """The two generated files of one experiment: chart values and generator input (with the
    Argo CD destination of the experiment's cluster); without the values with `values` False
    (the committed values file is known to be the one render writes: `Committed`).

    `config` gives the repository's choices the values carry (`networkPolicy`, the namespace's
    `policy`); without it, tfgen.yaml's defaults."""
    data = experiment.data
    meta = data["metadata"]
    cluster = experiment_cluster(config or builtin_config(Path()), data)
    wiring = argo.app_file(experiment.name, experiment.namespace, meta["owner"],
                           experiment.rel, cluster)
    if not values:
        return [wiring]
    values_path, _ = layout.generated_paths(experiment.name)
    body = dump_yaml(repo_values(data, config))  # what validate measured, to the byte
    return [GeneratedFile(values_path, (experiment.rel,), body), wiring]


@dataclass(frozen=True)
class Committed:
    """What a plan is told of the committed tree instead of reading it all (each field
    optional: by default every committed file is read from the repository).

    `files` maps the repository-relative paths where tfgen writes (`layout.generated_files`)
    to their bytes; `hashes`, their content hashes (`keys.content_hash`): a file whose wanted
    content has its hash is unchanged without being read. `settled` names experiments whose
    files are known to be what would be written: they are neither built nor read, and
    planned as unchanged; an experiment whose values file has the content hash the validate
    stage measured (`Experiment.values_digest`) has that file planned so too. `wiring` are
    the argo/ files `argo.argo_files` renders from
    tfgen.yaml's `argocd` block, when the caller has them. With `only`, the plan looks at
    those experiments' folders alone (and at the files of no experiment); `elsewhere` are the
    other experiments, which CODEOWNERS still lists."""

    files: Mapping[str, bytes] | None = None
    hashes: Mapping[str, str] | None = None
    settled: Collection[str] = ()
    wiring: Sequence[GeneratedFile] | None = None
    only: Collection[str] | None = None
    elsewhere: Sequence[Owned] = ()

    def values_settled(self, experiment: Experiment) -> bool:
        """Whether the experiment's committed values file is the one render writes, by the
        content hash the validate stage measured (without writing the file again)."""
        values_path, _ = layout.generated_paths(experiment.name)
        return (self.hashes is not None and experiment.values_digest is not None
                and self.hashes.get(values_path) == experiment.values_digest)

    def tree(self, root: Path) -> Mapping[str, bytes]:
        """The committed files the plan compares with (read from `root` when not given)."""
        files = layout.generated_files(root) if self.files is None else self.files
        if self.only is None:
            return files
        only = self.only
        return Subset(files, {rel for rel in files  # each read when asked for
                              if (name := layout.experiment_of(rel)) is None or name in only})


def wanted_files(
    experiments: Iterable[Experiment],
    argocd: Mapping[str, Any],
    config: RepoConfig | None = None,
    committed: Committed = Committed(),
) -> tuple[Iterator[GeneratedFile], list[Problem]]:
    """Everything tfgen generates for these experiments, tfgen.yaml's `argocd` block and the
    rest of the repository config (its defaults when None: no owners, so no CODEOWNERS).
    The experiments `committed` knows settled are left out (see `Committed`), and CODEOWNERS
    also lists the experiments it names `elsewhere`. The files are made as they are taken,
    one experiment's at a time: ten thousand experiments' files are never held at once."""
    files = list(argo.argo_files(argocd) if committed.wiring is None else committed.wiring)
    experiments = list(experiments)
    owners_file, problems = codeowners_file(config.owners if config else {},
                                            [*experiments, *committed.elsewhere])
    if owners_file is not None:
        files.append(owners_file)
    planned = []
    for experiment in sorted(experiments, key=lambda e: e.rel):
        # Names become folder names: the validate stage allows only names that cannot leave
        # argo/experiments/, and the writer checks it again rather than trust its caller.
        if not naming.is_experiment_name(experiment.name):
            problems.append(Problem(experiment.rel, pointer="$.metadata.name",
                                    message=f"{experiment.name!r} is not a DNS-1035 label",
                                    hint=naming.NAME_RULE))
            continue
        if experiment.name not in committed.settled:
            planned.append(experiment)
    made = (generated for experiment in planned for generated in experiment_files(
        experiment, config, values=not committed.values_settled(experiment)))
    return itertools.chain(files, made), problems


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd"  # not text, so certainly not ours: reported as foreign


_FOREIGN_WANTED = Problem("", message="exists but was not generated by tfgen (no tfgen header); "
                          "left untouched", hint="move it away, then run `tfgen render`")
_FOREIGN_LEFT = Problem("", message="not generated by tfgen (no tfgen header); left untouched",
                        hint="argo/experiments/ holds only files written by `tfgen render`")


def plan_render(
    root: Path,
    experiments: Iterable[Experiment],
    argocd: Mapping[str, Any],
    *,
    config: RepoConfig | None = None,
    committed: Committed = Committed(),
    pending: Collection[str] = (),
) -> RenderPlan:
    """Render everything in memory and compare with the committed files; writes nothing.

    `committed` is what the caller knows of the committed tree (`Committed`; by default it is
    read from `root`). `pending` names experiments whose spec exists but did not validate:
    their generated files are neither wanted nor orphans (the spec's problems say what to
    fix). `config` is the repository config the per-experiment values depend on (None:
    tfgen.yaml's defaults).
    """
    experiments = list(experiments)
    files, problems = wanted_files(experiments, argocd, config, committed)
    tree = committed.tree(root)
    changes = _settled(experiments, committed)
    wanted = {change.path for change in changes}
    for generated in files:
        wanted.add(generated.path)
        if generated.path == layout.CODEOWNERS_FILE and pending:
            # Its lines for the specs that did not validate cannot be known: the specs'
            # problems are the ones to fix first, not a drift of this file.
            continue
        changes.append(_compared(generated, tree, committed.hashes))
    changes += _left_over(tree, wanted, pending)
    problems += _foreign_problems(changes)
    changes.sort(key=lambda c: c.path)
    return RenderPlan(root=root, changes=changes, problems=problems,
                      experiments=len(experiments))


def _settled(experiments: Iterable[Experiment], committed: Committed) -> list[FileChange]:
    """The files known settled (see `Committed`), planned unchanged without being built or
    read."""
    changes = []
    for experiment in experiments:
        values_path, wiring_path = layout.generated_paths(experiment.name)
        if experiment.name in committed.settled:
            paths = [values_path, wiring_path]
        elif committed.values_settled(experiment):
            paths = [values_path]
        else:
            continue
        changes += [FileChange(path, UNCHANGED, None, None, (experiment.rel,)) for path in paths]
    return changes


def _foreign_problems(changes: Iterable[FileChange]) -> list[Problem]:
    """A problem for each file tfgen did not write where it would write (a wanted path) or
    in argo/experiments/ (a stranger): left untouched, so somebody has to look."""
    problems = []
    for change in changes:
        if change.action != FOREIGN:
            continue
        problem = _FOREIGN_WANTED if change.new is not None else _FOREIGN_LEFT
        problems.append(replace(problem, path=change.path))
    return problems


def _compared(generated: GeneratedFile, tree: Mapping[str, bytes],
              hashes: Mapping[str, str] | None) -> FileChange:
    """What rendering would do to one wanted file."""
    new = generated.content
    if hashes is not None and hashes.get(generated.path) == content_hash(new.encode()):
        return FileChange(generated.path, UNCHANGED, None, None, generated.sources)  # not read
    raw = tree.get(generated.path)
    old = None if raw is None else _text(raw)
    if old == new:
        # nobody needs an unchanged file's text: not kept (thousands of them add up)
        return FileChange(generated.path, UNCHANGED, None, None, generated.sources)
    action = CREATE if old is None else UPDATE if is_generated(old) else FOREIGN
    return FileChange(generated.path, action, new, old, generated.sources)


def _left_over(tree: Mapping[str, bytes], wanted: Collection[str],
               pending: Collection[str]) -> list[FileChange]:
    """The committed files no spec generates: tfgen's own are orphans; a stranger in
    argo/experiments/ is foreign (a hand-made app.yaml there would become an Application, so
    it is worth a look, but it is not ours to delete)."""
    changes = []
    for rel in sorted(set(tree) - set(wanted)):
        if layout.experiment_of(rel) in pending:
            continue
        old = _text(tree[rel])
        if is_generated(old):
            changes.append(FileChange(rel, ORPHAN, None, old))
        elif rel.startswith(layout.GENERATED_DIR + "/"):
            changes.append(FileChange(rel, FOREIGN, None, old))
    return changes


def drift_problems(plan: RenderPlan) -> list[Problem]:
    """The plan's drift as problems: committed generated files that are missing, out of date
    or left over (what `tfgen check` reports), each with the render that mends it."""
    return [
        Problem(change.path, message=f"generated file is {DRIFT_WORDS[change.action]}",
                hint=DRIFT_HINTS[change.action])
        for change in plan.drift
    ]


def plan_repository(
    root: Path | None = None, memory: Memory | None = None
) -> tuple[RenderPlan | None, list[Problem]]:
    """Validate every spec under the repository's experiments/ and plan the render; with a
    `memory` (`insync.remembering`), known verdicts and files known in sync are not worked
    out again, and the plan tells the memory what was written.

    Returns (None, problems) when any spec is invalid: nothing is rendered from a repository
    that does not validate, so a half-valid tree never reaches Argo CD; else (the plan, the
    specs' warnings). Outside a tfgen
    repository (no tfgen.yaml here or above) there is nothing to render: `NotARepository`,
    before anything is written.
    """
    if layout.find_root([], root) is None:
        raise NotARepository((root or Path.cwd()).resolve())
    config = load_config([], cwd=root)
    folder = config.experiments_dir
    experiments: list[Experiment] = []
    warnings: list[Problem] = []
    if layout.spec_files(folder) or layout.misplaced_specs(folder):
        # (with no spec at all, the last one deleted, nothing is validated: a valid state,
        # argo/ keeps the wiring and every per-experiment file becomes an orphan)
        result = validate_paths([folder], config,
                                verdicts=memory.verdicts if memory else None)
        if errors_of(result.problems):
            return None, list(result.problems)
        experiments, warnings = result.experiments, warnings_of(result.problems)
    if memory is None:
        return plan_render(config.root, experiments, config.argocd, config=config), warnings
    return remembered_plan(memory, experiments, config), warnings


def remembered_plan(
    memory: Memory, experiments: Sequence[Experiment], config: RepoConfig,
    pending: Collection[str] = (), only: Collection[str] | None = None,
    elsewhere: Sequence[Owned] = (),
) -> RenderPlan:
    """`plan_render` against the files of `memory`'s snapshot, leaving out the experiments it
    knows in sync; it learns which ones are (now, and once the plan is written). `only` and
    `elsewhere`: as in `Committed`."""
    committed = Committed(files=memory.inputs.generated(), hashes=memory.inputs.hashes,
                          settled=memory.in_sync.known(experiments),
                          wiring=memory.argo_files(config.argocd), only=only,
                          elsewhere=elsewhere)
    plan = plan_render(config.root, experiments, config.argocd, config=config,
                       committed=committed, pending=pending)
    memory.in_sync.learn(plan.unsettled, experiments)
    plan.on_written = functools.partial(memory.in_sync.learn, plan.unsettled, experiments)
    return plan


class NotARepository(EnvironmentProblem):
    """A command that needs a tfgen repository run where no tfgen.yaml is (render writes argo/
    only in a tfgen repository)."""

    def __init__(self, start: Path) -> None:
        super().__init__(
            f"no {layout.CONFIG_NAME} in {start} or any folder above: not a "
            f"tfgen repository. Run tfgen in a repository's "
            f"folder (or pass --root), or start one with `tfgen init DIR` (a "
            f"{layout.CONFIG_NAME}, the chart, the wiring and the pull-request gate)")
