"""The objects stage of `tfgen check`: every Application rendered by helm exactly as Argo CD
would (`helm/batch`), or its verdict recalled from the cache, and its objects judged (`verdict`).

Helm runs in other processes, fed from a thread of its own: the check starts it first and
does its Python work meanwhile. Each manifest is judged as its helm batch finishes and dropped;
the cache keeps it (for --base, kubeconform and diff) and the verdict.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from ...problems import Problem
from ...render import Memory
from ...repo import layout, resources
from ...repo.cache import Cache
from ...validate import RepoConfig
from ..argo import wiring
from ..argo.applications import ResolvedApplication
from ..documents.manifests import ManifestValidator
from ..helm.batch import BatchRenderer
from ..helm.command import RenderJob
from ..helm.jobs import RenderResult, jobs_for
from . import verdict

Progress = Callable[[str, int, int], None]


class Judging:
    """The objects stage over some Applications: each one's objects judged as helm renders
    them (in a thread of its own), or their verdict recalled from the cache. `validator`:
    check's --validator; `every_one`: render each Application even when its verdict is
    known (--base compares manifests, kubeconform reads them)."""

    def __init__(self, apps: list[ResolvedApplication], *, config: RepoConfig, memory: Memory,
                 renderer: BatchRenderer, validator: str, every_one: bool) -> None:
        self.apps, self.renderer = apps, renderer
        # verdicts on what a helm renders are remembered only when its renders are
        self.cache = memory.cache if renderer.remembers else Cache(None)
        keys, kube = memory.keys, config.kubernetes_version
        self.jobs = jobs_for(apps, kube)
        self.argo, self._argo_problems = verdict.argo_objects(config.root, memory.inputs.files)
        self.judge = verdict.Judge(ManifestValidator(kube, resources.schema_dir()),
                                   wiring.load_projects(self.argo),
                                   schema_check=validator != "kubeconform", config=config)
        projects = self.judge.fingerprint()
        self.render_keys = [renderer.key(job) for job in self.jobs]
        self.keys = [
            keys.objects(render_key, app.namespace, app.project, kube_version=kube,
                         schema_check=self.judge.schema_check, projects=projects)
            for render_key, app in zip(self.render_keys, apps, strict=True)
        ]
        self.known = self.cache.get_many("objects", self.keys)
        self.todo = [i for i, key in enumerate(self.keys) if every_one or key not in self.known]
        self.outcomes: dict[int, verdict.ObjectsVerdict | Problem] = {}

    @property
    def reused(self) -> int:
        """The Applications whose verdict came from the cache."""
        return len(self.jobs) - len(self.todo)

    def render(self, progress: Progress | None) -> None:
        self.renderer.render_each([self.jobs[i] for i in self.todo], self._first_look,
                                  _ticker(progress, len(self.todo)),
                                  keys=[self.render_keys[i] for i in self.todo])

    def _first_look(self, position: int, fresh: RenderResult) -> None:
        # Called in the render thread as each helm batch finishes: the manifest is judged
        # here and dropped, only the verdict stays (and the cache keeps the manifest).
        index = self.todo[position]
        if self.keys[index] in self.known:
            return  # rendered for --base or kubeconform only: the stored verdict stands
        outcome = self.outcomes[index] = self.judge.first_look(self.apps[index], fresh)
        if isinstance(outcome, verdict.ObjectsVerdict):
            self.cache.put("objects", self.keys[index], outcome.to_json())

    def argo_problems(self) -> list[Problem]:
        """The problems of the Argo CD objects in argo/*.yaml."""
        out = list(self._argo_problems)
        for shown, obj in self.argo:
            out += self.judge.validator.problems(obj, shown)
        return out

    def located(self, spec_of: Mapping[str, str]) -> tuple[list[verdict.AppObjects],
                                                            list[Problem]]:
        """Each Application's objects, and their problems located at its spec (`spec_of`, by
        name), else at its generator file. Called once the renders are done."""
        rendered: list[verdict.AppObjects] = []
        problems: list[Problem] = []
        for index, (app, job, key) in enumerate(zip(self.apps, self.jobs, self.keys,
                                                    strict=True)):
            where = spec_of.get(app.name) or layout.shown(app.generator_file)
            outcome = self.outcomes.get(index) or verdict.ObjectsVerdict.from_json(self.known[key])
            item, found = verdict.located(app, where, outcome,
                                          functools.partial(self.manifest_of, job))
            problems += found
            if item is not None:
                rendered.append(item)
        return rendered, problems


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

