"""`tfgen check`: the offline pull-request gate over the whole chain.

A run composes the stages, each called as the other commands call it: the validate stage
checks every spec (`validate.validate_paths`, as `tfgen validate`), the render stage plans the
generated files against the committed ones (`render.plan_render`, as `tfgen render --check`).
Then the gate's own steps: resolve the Applications the committed ApplicationSet generates
(`applications`), render each with helm exactly as Argo CD would (`batch`), judge every
rendered object and every Argo CD object in argo/ (`objects`, `wiring`), and with a base
revision refuse changes a live run cannot take (`immutability`). Every finding is a `Problem`;
nothing is printed here.

Speed comes from the cache (`repo.cache`), keyed by content hashes of the run's snapshot
(`repo.inputs`): the whole result (nothing changed since the last identical run), each spec's
verdict (`validate.remembered`), the experiments whose files are in sync (`render.insync`,
shared with `tfgen render`), the resolved Applications, each experiment's rendered manifest and
the verdict on its objects. Its entries are signed with a key of this
machine, so a pull request cannot bring its own verdicts; a committed cache is not used and is
reported as a problem.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from .. import render
from ..errors import OptionsError
from ..problems import Problem
from ..repo import layout, resources
from ..repo.cache import CACHE_DIRNAME, Cache, tracked_problem
from ..validate import (
    RepoConfig,
    ValidationResult,
    load_config,
    repository_specs,
    validate_paths,
)
from ..words import counted
from . import VALIDATORS, base, immutability, kubeconform, objects, wiring
from .applications import Resolution, ResolvedApplication, resolve_applications
from .batch import BatchRenderer, RenderJob, RenderResult, jobs_for
from .helm import find_helm
from .manifests import ManifestValidator
from .resolutions import (
    RememberedApplications,
    resolution_from_json,
    resolution_inputs,
    resolution_to_json,
)

Progress = Callable[[str, int, int], None]


@dataclass
class CheckOptions:
    base: str | None = None
    changed_only: bool = False
    validator: str = "auto"  # auto: both when kubeconform is on PATH, else builtin
    use_cache: bool = True
    helm: str | None = None
    workers: int | None = None


@dataclass
class CheckResult:
    """Every problem found, and what was done to find them (for the summary line)."""

    problems: list[Problem] = field(default_factory=list)
    specs: int = 0
    applications: int = 0
    checked: int = 0  # applications rendered and validated (the rest: out of --changed scope)
    objects: int = 0
    helm_processes: int = 0
    cache_hits: int = 0  # experiments whose render or verdict came from .tfgen-cache/
    from_cache: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """The closing lines in plain words: what was checked, the verdict, the next step."""
        total = self.applications or self.specs
        scope = (counted(total, "experiment") + " checked" if self.checked == total
                 else f"{self.checked} of {counted(total, 'experiment')} checked (the others "
                      "are untouched since the base)")
        if self.from_cache:
            how = "nothing changed since the last check: its whole result reused"
        else:
            how = (f"{self.checked - self.cache_hits} rendered by helm, "
                   f"{self.cache_hits} reused from the last check")
        if self.problems:
            return (f"{scope}: {counted(len(self.problems), 'problem')} "
                    f"({counted(self.objects, 'object')} rendered; {how}). Next: fix them, "
                    "then run `tfgen check` again")
        return (f"{scope}: all clear ({counted(self.objects, 'object')} valid, 0 "
                f"problems; {how}). Next: commit and open a pull request")

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CheckResult:
        data = json.loads(text)
        data["problems"] = [Problem(**p) for p in data["problems"]]
        return cls(**{**data, "from_cache": True})


def run_check(
    root: Path, options: CheckOptions | None = None, progress: Progress | None = None
) -> CheckResult:
    """Run the whole gate over the repository at `root`; returns every problem found."""
    options = options or CheckOptions()
    if options.validator not in VALIDATORS:
        raise OptionsError(f"--validator {options.validator}: one of {', '.join(VALIDATORS)}")
    if options.changed_only and not options.base:
        raise OptionsError("--changed needs --base REF (changes are counted since REF)")
    if options.validator == "auto":
        found = kubeconform.find_kubeconform()
        options = replace(options, validator="both" if found else "builtin")
    if options.validator in ("kubeconform", "both"):
        kubeconform.require_kubeconform()
    gate = _Gate(load_config(cwd=root), options)
    try:
        return gate.run(progress)
    finally:
        gate.close()


class _Gate:
    """One run of the gate over one repository: its inputs, its cache, its helm."""

    def __init__(self, config: RepoConfig, options: CheckOptions) -> None:
        self.config, self.options, self.root = config, options, config.root
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

    def run(self, progress: Progress | None) -> CheckResult:
        """The result of the last identical run, else a new one."""
        base_commit = base.resolve(self.root, self.options.base) if self.options.base else ""
        run_key = self.keys.run(self.renderer.helm_version, asdict(self.options), base_commit,
                                self.inputs.digest)
        stored = self.cache.get("check", run_key)
        if stored is not None:
            return CheckResult.from_json(stored)
        result = self.check(progress)
        self.cache.put("check", run_key, result.to_json())
        committed = tracked_problem(self.root)  # then the cache above was neither read nor written
        if committed is not None:
            result.problems = sorted({*result.problems, committed})
        return result

    def check(self, progress: Progress | None) -> CheckResult:
        result = CheckResult()
        kube = self.config.kubernetes_version
        resolution = self.resolve()
        apps = self.in_scope(resolution.applications)
        jobs = jobs_for(apps, kube)
        argo, argo_problems = objects.argo_objects(self.root, self.inputs.files)
        judge = objects.Judge(ManifestValidator(kube, resources.schema_dir()),
                              wiring.load_projects(argo),
                              schema_check=self.options.validator != "kubeconform",
                              config=self.config)
        projects = judge.fingerprint()
        verdict_keys = [
            self.keys.objects(self.renderer.key(job), app.namespace, app.project,
                              kube_version=kube, schema_check=judge.schema_check,
                              projects=projects)
            for job, app in zip(jobs, apps, strict=True)
        ]
        known = self.cache.get_many("objects", verdict_keys)
        # --base compares manifests and kubeconform reads them: then every one is rendered.
        need_all = bool(self.options.base) or self.options.validator != "builtin"
        todo = [i for i, key in enumerate(verdict_keys) if need_all or key not in known]
        outcomes: dict[int, objects.Verdict | Problem] = {}

        def first_look(position: int, fresh: RenderResult) -> None:
            # Called in the render thread as each helm batch finishes: the manifest is judged
            # here and dropped, only the verdict stays (and the cache keeps the manifest).
            index = todo[position]
            if verdict_keys[index] in known:
                return  # rendered for --base or kubeconform only: the stored verdict stands
            outcome = outcomes[index] = judge.first_look(apps[index], fresh)
            if isinstance(outcome, objects.Verdict):
                self.cache.put("objects", verdict_keys[index], outcome.to_json())

        with ThreadPoolExecutor(max_workers=1) as pool:
            # Helm runs in other processes: start it first and check specs, generated files
            # and argo/ while it renders (on two cores this hides most of the Python work).
            rendering = pool.submit(self.renderer.render_each, [jobs[i] for i in todo],
                                    first_look, _ticker(progress, len(todo)))
            specs = validate_paths(repository_specs(self.config), self.config,
                                   verdicts=self.memory.verdicts)
            result.problems += specs.problems + self.drift(specs) + argo_problems
            for shown, obj in argo:
                result.problems += judge.validator.problems(obj, shown)
            result.problems += self.wiring(resolution, judge.projects)
            rendering.result()
        spec_of = {e.name: e.shown for e in specs.experiments}
        rendered: list[objects.AppObjects] = []
        for index, (app, job, key) in enumerate(zip(apps, jobs, verdict_keys, strict=True)):
            where = spec_of.get(app.name) or layout.shown(app.generator_file)
            outcome = outcomes.get(index) or objects.Verdict.from_json(known[key])
            item, found = objects.located(app, where, outcome,
                                          functools.partial(self.manifest_of, job))
            result.problems += found
            if item is not None:
                result.objects += len(item.keys)
                rendered.append(item)
        result.problems += objects.collisions(rendered)
        if self.options.validator != "builtin":
            result.problems += objects.kubeconform_problems(rendered, judge.validator)
        if self.options.base:
            result.problems += immutability.base_problems(
                self.root, self.options.base, rendered, kube, self.renderer)
        result.specs, result.applications = len(specs.files), len(resolution.applications)
        result.checked = len(apps)
        result.helm_processes = self.renderer.stats.helm_processes
        result.cache_hits = len(jobs) - len(todo) + self.renderer.stats.cached
        result.problems = sorted(set(result.problems))
        return result

    def resolve(self) -> Resolution:
        """The Applications the committed ApplicationSet generates, remembered by what
        resolving them reads: all of them, else each one (`resolutions`)."""
        key = self.keys.resolution(self.root, resolution_inputs(self.inputs.hashes))
        stored = self.cache.get("resolve", key)
        if stored is not None:
            return resolution_from_json(stored)
        resolution = resolve_applications(
            self.root, RememberedApplications(self.cache, self.keys, self.inputs))
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

    def drift(self, specs: ValidationResult) -> list[Problem]:
        """Committed generated files that differ from what `tfgen render` would write. An
        experiment whose spec, generated files and tfgen.yaml have the contents of an earlier
        run that found its files in sync is not planned again."""
        plan = render.remembered_plan(self.memory, specs.experiments, self.config,
                                      pending=specs.invalid_names)
        return [replace(p, path=layout.shown(p.path, self.root))
                for p in plan.problems + render.drift_problems(plan)]

    def wiring(self, resolution: Resolution, projects: dict[str, wiring.Project]) -> list[Problem]:
        """Would every generated Application sync, each under its own name?"""
        out = [replace(p, path=layout.shown(p.path, self.root)) for p in resolution.problems]
        names: dict[str, str] = {}
        for app in resolution.applications:
            where = layout.shown(app.generator_file)
            if app.name in names:
                out.append(Problem(where, pointer="$.metadata.name", message=(
                    f"Application {app.name!r} is also generated from {names[app.name]}")))
            names[app.name] = where
            out += wiring.application_problems(self.root, app, projects, where)
        return out

    def manifest_of(self, job: RenderJob) -> str:
        """A job's manifest: from the cache, else rendered now (the cache may be gone)."""
        text = self.renderer.cached(job)
        if text is None:
            [rendered] = self.renderer.render([job])
            text = rendered.manifest
        return text


def _ticker(progress: Progress | None, total: int) -> Callable[[int], None]:
    done = 0

    def tick(count: int) -> None:
        nonlocal done
        done += count
        if progress:
            progress("render", done, total)

    return tick

