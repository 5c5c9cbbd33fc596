"""`tfgen check`: the offline pull-request gate over the whole chain.

A run composes the stages, each called as the other commands call it: the validate stage
checks every spec (`validate.validate_paths`, as `tfgen validate`), the render stage plans the
generated files against the committed ones (`render.plan_render`, as `tfgen render --check`).
Then the gate's own steps: resolve the Applications the committed ApplicationSet generates
(`argo/`), render each with helm exactly as Argo CD would (`helm/`) and judge every rendered
object and every Argo CD object in argo/ (`objects/`), and with a base revision refuse changes
a live run cannot take (`revisions/`). Every finding is a `Problem`;
nothing is printed here.

There is one sequence of stages (`Gate.check`); the cache only chooses its scope and spares
work inside the stages. Its entries, keyed by content hashes of the run's snapshot
(`repo.inputs`): the whole result (nothing changed since the last identical run), the ledger
of the last all-clear run (then the scope is the experiments changed since, the others
standing as the ledger keeps them: `scope`, `ledger`), each spec's verdict
(`validate.remembered`), the experiments whose files are in sync (`render.insync`, shared with
`tfgen render`), the resolved Applications, each experiment's rendered manifest and the
verdict on its objects. Its entries are signed with a key of this machine, so a pull request
cannot bring its own verdicts; a committed cache is not used and is reported as a problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .. import render
from ..errors import OptionsError
from ..problems import Problem
from ..repo import layout, owned
from ..repo.cache import CACHE_DIRNAME, Cache, tracked_problem
from ..repo.keys import path_digest
from ..validate import RepoConfig, ValidationResult, load_config, repository_specs, validate_paths
from . import ledger
from .argo import wiring
from .argo.applications import Resolution, ResolvedApplication, resolve_applications
from .argo.resolutions import (
    RememberedApplications,
    resolution_from_json,
    resolution_inputs,
    resolution_to_json,
)
from .documents import VALIDATORS, kubeconform
from .helm.batch import BatchRenderer
from .helm.command import find_helm, program_digest
from .objects import verdict
from .objects.judging import Judging, Progress
from .result import CheckResult
from .revisions import base, immutability, retained
from .scope import WHOLE, Scope, since


@dataclass
class CheckOptions:
    base: str | None = None
    changed_only: bool = False
    validator: str = "auto"  # auto: both when kubeconform is on PATH, else builtin
    use_cache: bool = True
    helm: str | None = None
    workers: int | None = None


def run_check(
    root: Path, options: CheckOptions | None = None, progress: Progress | None = None
) -> CheckResult:
    """Run the whole gate over the repository at `root`; returns every problem found."""
    options = options or CheckOptions()
    if options.validator not in VALIDATORS:
        raise OptionsError(f"--validator {options.validator}: one of {', '.join(VALIDATORS)}")
    if options.changed_only and not options.base:
        raise OptionsError("--changed needs --base REF (changes are counted since REF)")
    chosen = None  # kubeconform when --validator auto takes it on
    if options.validator == "auto":
        chosen = kubeconform.find_kubeconform()
        options = replace(options, validator="both" if chosen else "builtin")
    if options.validator in ("kubeconform", "both"):
        kubeconform.require_kubeconform()
    gate = Gate(load_config(cwd=root), options, kubeconform_chosen=chosen)
    try:
        return gate.run(progress)
    finally:
        gate.close()


@dataclass
class Pass:
    """One pass of the stages over a scope: its result, and what the ledger keeps of it."""

    scope: Scope
    result: CheckResult
    applications: list[ResolvedApplication]
    facts: dict[str, dict[str, Any]]
    rendered: list[verdict.AppObjects]
    warnings: dict[str, tuple[Problem, ...]]  # each valid experiment's own, by name


class Gate:
    """One run of the gate over one repository: its inputs, its cache, its helm."""

    def __init__(self, config: RepoConfig, options: CheckOptions,
                 kubeconform_chosen: str | None = None) -> None:
        self.config, self.options, self.root = config, options, config.root
        self.kubeconform_chosen = kubeconform_chosen
        # The specs the pull request adds or alters: a problem between experiments is theirs.
        self.focus = base.changed_specs(self.root, options.base) if options.base else None
        self.memory = render.Memory(self.root, use_cache=options.use_cache)
        self.cache, self.keys, self.inputs = (
            self.memory.cache, self.memory.keys, self.memory.inputs)
        # The renderer works in a thread of its own, with its own connection to the cache.
        cache_dir = self.root / CACHE_DIRNAME if options.use_cache else None
        self.renderer = BatchRenderer(
            helm=options.helm or find_helm(root=self.root), cache=Cache(cache_dir),
            keys=self.keys, workers=options.workers, known_hash=self.inputs.hash_of,
        )
        wiring.forget_filesystem()  # what an earlier run in this process learnt of files

    def close(self) -> None:
        self.cache.close()
        self.renderer.cache.close()
        self.renderer.programs.close()

    def run(self, progress: Progress | None) -> CheckResult:
        """The result of the last identical run, else the stages over the experiments changed
        since the last all-clear run (`scope`), else over the whole repository."""
        base_commit = base.resolve(self.root, self.options.base) if self.options.base else ""
        options = asdict(self.options)
        tools, remembers = self.tools(), self.renderer.remembers
        run_key = self.keys.run(tools, options, base_commit, self.inputs.digest)
        known = self.stored(run_key) if remembers else None
        if known is not None:
            return known
        # --base compares every experiment with another revision: no ledger
        ledger_key = (self.keys.ledger(str(self.root.resolve()), tools, options)
                      if remembers and not base_commit else None)
        found = self.passed(ledger_key, progress)
        result = found.result
        result.notes = self.notes(found)
        if remembers:
            self.cache.put("check", run_key, result.to_json())
        committed = tracked_problem(self.root)  # then the cache above was neither read nor written
        if committed is not None:
            result.problems = sorted({*result.problems, committed})
        return result

    def stored(self, run_key: str) -> CheckResult | None:
        """The result of the last identical run, while what it read beyond its snapshot is
        as it was."""
        stored = self.cache.get("check", run_key)
        if stored is None:
            return None
        known = CheckResult.from_json(stored)
        return known if unchanged(known.reads) else None

    def passed(self, ledger_key: str | None, progress: Progress | None) -> Pass:
        """A pass over the experiments changed since the last all-clear run, when its ledger
        stands, else over the whole repository; an all-clear pass's ledger kept."""
        found = self.check(self.scope(ledger_key), progress)
        if not found.scope.whole and not self.holds(found):
            found = self.check(WHOLE, progress)  # says what was found, as a full check does
        if ledger_key and self.holds(found):
            self.keep(ledger_key, found)
        return found

    def notes(self, found: Pass) -> list[str]:
        """The lines said beside a pass's result: helm off its fast path, kubeconform's cost."""
        notes = (self.renderer.slow_path_note(found.result.applications),
                 self.kubeconform_note(found.scope))
        return [note for note in notes if note]

    def kubeconform_note(self, scope: Scope) -> str | None:
        """One line when --validator auto took kubeconform on and it read every object."""
        if not (self.kubeconform_chosen and scope.whole):
            return None
        return (f"kubeconform at {self.kubeconform_chosen} validates every rendered object a "
                "second time (--validator auto takes it on when it is on PATH): about half "
                "as much CPU again on a full check; `--validator builtin` checks as strictly "
                "without it")

    def tools(self) -> str:
        """The programs whose verdicts a stored result or the ledger stands on: helm's
        build, and kubeconform's when it validates."""
        helm = self.renderer.identity.key
        found = kubeconform.find_kubeconform() if self.options.validator != "builtin" else None
        return (f"{helm} kubeconform {program_digest(found, self.renderer.programs)}" if found
                else helm)

    def scope(self, ledger_key: str | None) -> Scope:
        """The experiments changed since the last all-clear run, when its ledger stands;
        else the whole repository."""
        if ledger_key is None or self.inputs.refused:
            return WHOLE
        judged = ledger.judged(self.config)
        before = ledger.load(self.cache, ledger_key, self.inputs.hashes, judged)
        if before is None or not unchanged(before.reads):
            return WHOLE
        return since(before, self.inputs, self.config, judged)

    def check(self, scope: Scope, progress: Progress | None = None) -> Pass:
        """Every stage, over the experiments of `scope`."""
        problems: list[Problem] = []
        cached = self.renderer.stats.cached  # a run's second pass counts its own reuse
        resolution = self.resolve(scope)
        apps = self.in_scope(resolution.applications)
        stage = self.judging(apps)
        with ThreadPoolExecutor(max_workers=1) as pool:
            # Helm runs in other processes: start it first and check specs, generated files
            # and argo/ while it renders (on two cores this hides most of the Python work).
            rendering = pool.submit(stage.render, progress)
            real = self.root.resolve()

            def measured(rel: str, digest: str) -> None:
                # a values file a spec was measured to make: the batches still to start read
                # it, unchanged, without writing it again to compare
                self.renderer.written[str(real / rel)] = digest

            specs = validate_paths(scope.specs(self.config, repository_specs(self.config)),
                                   self.config, scope.context(), verdicts=self.memory.verdicts,
                                   focus=self.focus, measured=measured)
            plan = self.plan(specs, scope)
            problems += (specs.problems + scope.warnings() + _drift(plan, self.root)
                         + stage.argo_problems() + owned.copies_problems(self.root))
            problems += wiring.applications_problems(self.root, resolution.applications,
                                                     stage.judge.projects, scope.applications())
            problems += [replace(p, path=layout.shown(p.path, self.root))
                         for p in resolution.problems]
            rendering.result()
        rendered, found = stage.located({e.name: e.shown for e in specs.experiments})
        # What this pass's own renders took from the cache; the base revision's renders below
        # go through the same renderer and are not the experiments checked.
        reused = stage.reused + self.renderer.stats.cached - cached
        problems += found + verdict.collisions(rendered, scope.identities())
        if self.options.validator != "builtin":
            problems += verdict.kubeconform_problems(rendered, stage.judge.validator)
        problems += self.revision_problems(rendered, plan)
        kept = scope.kept()
        result = CheckResult(
            problems=sorted(set(problems)),
            specs=len(specs.files) + sum(e.facts is not None for e in scope.others.values()),
            applications=len(resolution.applications) + len(kept),
            checked=len(apps) + len(kept),
            objects=sum(len(item.keys) for item in rendered) + sum(e.objects for e in kept),
            helm_processes=self.renderer.stats.helm_processes,
            cache_hits=reused + len(kept),
            reads={**(scope.before.reads if scope.before else {}),
                   **self.reads(resolution.applications)})
        facts, warnings = _by_name(specs)
        return Pass(scope, result, resolution.applications, facts, rendered, warnings)

    def revision_problems(self, rendered: list[verdict.AppObjects],
                          plan: render.RenderPlan) -> list[Problem]:
        """What a live run cannot take from the --base revision to this one (`revisions/`),
        judged on what `tfgen render` would write: a change that can never merge is said in
        the same run as the stale files it comes with, not after they are rendered and
        committed."""
        if not self.options.base:
            return []
        problems = immutability.base_problems(
            self.root, self.options.base,
            immutability.as_rendered(rendered, plan.updates, self.config.kubernetes_version,
                                     self.renderer),
            self.config.kubernetes_version, self.renderer, plan.updates)
        return problems + retained.retained_problems(
            self.root, self.options.base, rendered, self.config.kubernetes_version,
            self.renderer)

    def holds(self, found: Pass) -> bool:
        """Whether a pass's all-clear can stand for the next run (`ledger.keeps`)."""
        return found.result.ok and ledger.keeps(self.root, found.applications)

    def keep(self, ledger_key: str, found: Pass) -> None:
        """The ledger of an all-clear pass: a new one for the whole repository, else the one
        it was since, with the changed experiments as they are now."""
        entries = ledger.entries(self.root, found.facts, found.rendered, found.warnings)
        if found.scope.before is None:
            kept = ledger.Ledger.of(self.inputs.hashes, found.result.reads, entries)
        else:
            kept = found.scope.before
            kept.update(self.inputs.hashes, found.scope.changed or (), entries)
            kept.reads = found.result.reads
        ledger.save(self.cache, ledger_key, kept)

    def judging(self, apps: list[ResolvedApplication]) -> Judging:
        """The objects stage over these Applications."""
        return Judging(apps, config=self.config, memory=self.memory, renderer=self.renderer,
                       validator=self.options.validator,
                       every_one=bool(self.options.base) or self.options.validator != "builtin")

    def reads(self, applications: Iterable[ResolvedApplication]) -> dict[str, str]:
        """What these Applications make helm read that the snapshot holds no hash of
        (`CheckResult.reads`)."""
        applications = list(applications)
        charts = {app.chart_dir for app in applications}  # one for ten thousand Applications
        paths = {chart.resolve() for chart in charts} | {
            path for app in applications for path in app.value_files
            if self.inputs.hash_of(path) is None}
        return {str(path): path_digest(path) for path in paths}

    def resolve(self, scope: Scope) -> Resolution:
        """The Applications the committed ApplicationSet generates from the scope's files,
        remembered by what resolving them reads: all of them, else each one
        (`resolutions`)."""
        remembered = RememberedApplications(self.cache, self.keys, self.inputs)
        if not scope.whole:
            return resolve_applications(self.root, remembered, among=scope.files)
        key = self.keys.resolution(self.root, resolution_inputs(self.inputs.hashes))
        stored = self.cache.get("resolve", key)
        if stored is not None:
            return resolution_from_json(stored)
        resolution = resolve_applications(self.root, remembered)
        self.cache.put("resolve", key, resolution_to_json(resolution))
        return resolution

    def in_scope(self, applications: Sequence[ResolvedApplication]) -> list[ResolvedApplication]:
        """The Applications to render: those --changed selects, whose chart exists (a wrong
        chart path is reported by the wiring checks; helm is not asked to render it)."""
        scope = None
        if self.options.changed_only and self.options.base:
            scope = base.changed_experiments(self.root, self.options.base)
        charts = {a.chart_dir for a in applications}  # one for ten thousand Applications
        found = {chart for chart in charts if (chart / "Chart.yaml").is_file()}
        return [a for a in applications if (scope is None or a.name in scope)
                and a.chart_dir in found]

    def plan(self, specs: ValidationResult, scope: Scope) -> render.RenderPlan:
        """What `tfgen render` would write for the scope's experiments. An experiment whose
        spec, generated files and tfgen.yaml have the contents of an earlier run that found
        its files in sync is not planned again."""
        return render.remembered_plan(self.memory, specs.experiments, self.config,
                                      pending=specs.invalid_names, only=scope.changed,
                                      elsewhere=scope.owned())


def _drift(plan: render.RenderPlan, root: Path) -> list[Problem]:
    """Committed generated files that differ from what `tfgen render` would write."""
    return [replace(p, path=layout.shown(p.path, root))
            for p in plan.problems + render.drift_problems(plan)]


def _by_name(specs: ValidationResult
             ) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[Problem, ...]]]:
    """Each valid experiment's facts and its own warnings, by name (what the ledger keeps)."""
    facts: dict[str, dict[str, Any]] = {}
    warnings: dict[str, tuple[Problem, ...]] = {}
    for experiment in specs.experiments:
        facts[experiment.name] = specs.facts[experiment.shown]
        if experiment.shown in specs.warnings:
            warnings[experiment.name] = specs.warnings[experiment.shown]
    return facts, warnings


def unchanged(reads: Mapping[str, str]) -> bool:
    """Whether what a stored result read beyond its snapshot is as it was."""
    return all(path_digest(Path(path)) == known for path, known in reads.items())
