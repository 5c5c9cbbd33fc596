"""Rendering many experiments with few `helm` processes, and not at all when nothing changed.

One `helm template` process costs ~65 ms, so a gate over a thousand experiments cannot start one
per experiment. Instead we generate an umbrella chart (`umbrella`) in a temporary folder with
one aliased dependency per experiment (all pointing at one copy of the chart), give each alias
its experiment's values and split helm's output back per experiment using the `# Source:
<umbrella>/charts/<alias>/templates/...` comments. The chart promises not to use `.Release.*` or
`.Chart.Name` in its output, so the objects are the ones the per-experiment `helm template` that
Argo CD runs would produce (a test proves it byte for byte). Two Helm behaviours differ for
subcharts and are neutralised here: parent-supplied `null`s do not delete subchart defaults in
Helm 4 (so we merge values with the chart defaults ourselves, Helm's way, and give the copy an
empty values.yaml), and Helm adds a `global` key to every subchart's values (so the copy's
values.schema.json admits `global`). Helm's own check of the values against values.schema.json
costs about a quarter of its time per experiment, so each experiment's values are checked here
first with a validator compiled once: an experiment they fail is rendered alone by a plain `helm
template` (helm's own verdict and message, as Argo CD would see them), and a batch of
experiments that pass is rendered with `--skip-schema-validation`. Results are cached by content
hash; a batch that fails is bisected so each failing experiment gets its own helm error message.

Only values files in the writer's canonical form are batched, and only for a chart whose
defaults helm reads as tfgen does: why, in `values`.

Batches and the skipped schema check are shortcuts that rest on how helm behaves, which moves
between releases: each helm build takes only the shortcuts it was seen to take on a probe
chart (`probe`, once per build by its content hash). Renders are remembered by the helm's
identity (`helm.HelmIdentity`); a helm without one (a wrapper, a shim) has nothing remembered.
"""

from __future__ import annotations

import itertools
import os
import queue
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import EnvironmentProblem, HelmError
from ...repo import chart as chart_facts
from ...repo.cache import Cache, machine_cache
from ...repo.keys import CacheKeys, content_hash, tool_digest
from . import command as helm_mod
from . import probe
from .command import HelmIdentity, RenderJob
from .jobs import RenderResult
from .probe import Shortcuts
from .umbrella import (
    UMBRELLA,
    ChartInfo,
    alias,
    aliases_named,
    canonical_manifest,
    split_umbrella,
    write_umbrella,
)
from .values import coalesce, files_merged

MIN_CHUNK = 25
# Batches started and not yet taken, per worker: one rendering, one finished and waiting.
IN_FLIGHT = 2
Progress = Callable[[int], None]


@dataclass
class BatchStats:
    """What a renderer did: helm processes started, jobs rendered, jobs found in the cache."""

    helm_processes: int = 0
    cached: int = 0
    rendered: int = 0


OnResult = Callable[[int, RenderResult], None]
Pending = list[tuple[int, str]]  # jobs to render: (index among the jobs, cache key)
Group = tuple[Path, str | None, tuple[str, ...]]  # chart, Kubernetes and API versions


class BatchRenderer:
    """Renders RenderJobs through the real helm, batched, cached and in parallel."""

    def __init__(
        self,
        *,
        helm: str | None = None,
        cache: Cache | None = None,
        keys: CacheKeys | None = None,
        workers: int | None = None,
        chunk_size: int = 150,
        known_hash: Callable[[Path], str | None] | None = None,
    ) -> None:
        self.helm = helm or helm_mod.find_helm()
        # The content hash of a values file when the caller already knows it (the gate's
        # snapshot): a repository's render keys then cost no read of its values files.
        self.known_hash = known_hash or (lambda path: None)
        # The content hashes of values files known to be the writer's output, by path, as the
        # caller learns them (the gate: once its validate stage has measured them): a batch
        # reads such a file without writing it again to compare (`values.files_merged`).
        self.written: dict[str, str] = {}
        self.cache = cache or Cache(None)
        self.keys = keys or CacheKeys(tool_digest(), os.getcwd())
        # Two helm processes per core keep the cores busy while one of them reads, writes or
        # collects garbage (measured: 1,000 experiments on 2 cores, 4 workers x 125 per
        # process 5.5 s, 2 workers x 400-500 per process 6.0 s).
        self.workers = workers or max(2, 2 * (os.cpu_count() or 1))
        self.chunk_size = chunk_size
        self.stats = BatchStats()
        self._charts: dict[Path, ChartInfo] = {}
        self._defaults: dict[str, str] = {}  # defaults_agree() without a cache
        self.one_by_one: list[str] = []  # charts whose defaults helm reads otherwise
        self._identity: HelmIdentity | None = None
        self._shortcuts: Shortcuts | None = None
        # what this machine's helm builds are and do: asked once per machine, not per
        # repository (a cache of its own, beside the machine's key), unless nothing is cached
        where = self.cache.path
        self.programs = machine_cache(where.parent.parent) if where is not None else self.cache

    @property
    def identity(self) -> HelmIdentity:
        """Which helm renders (`helm.identify`). One that is not the build it reports has
        nothing remembered: its renders go to no cache."""
        if self._identity is None:
            if not Path(self.helm).exists() and not shutil.which(self.helm):
                raise EnvironmentProblem(f"helm not found at {self.helm}; {helm_mod.INSTALL_HINT}")
            self._identity = helm_mod.identify(self.helm, self.programs)
            if not self._identity.pinned:
                self.cache.close()
                self.cache = Cache(None)
        return self._identity

    @property
    def remembers(self) -> bool:
        """Whether what this helm renders may be remembered beyond this run."""
        return self.identity.pinned

    @property
    def shortcuts(self) -> Shortcuts:
        """The shortcuts this helm build takes: remembered, else verified now (`probe`)."""
        if self._shortcuts is None:
            key = self.keys.helm_shortcuts(self.identity.key)
            known = probe.BY_NAME.get(self.programs.get("helm-shortcuts", key) or "")
            if known is None:
                known = probe.verify(self.with_shortcuts)
                if self.identity.pinned:
                    self.programs.put("helm-shortcuts", key, known.name)
                    self.programs.flush()
            self._shortcuts = known
        return self._shortcuts

    def with_shortcuts(self, shortcuts: Shortcuts) -> BatchRenderer:
        """A renderer of the same helm that remembers nothing and takes these shortcuts."""
        other = BatchRenderer(helm=self.helm, workers=1, chunk_size=self.chunk_size)
        other._identity, other._shortcuts = self.identity, shortcuts
        return other

    def slow_path_note(self, experiments: int) -> str | None:
        """One line when this helm renders off the fast path (`probe.slow_path_note`),
        as far as this run has learnt (it probes nothing for it)."""
        return probe.slow_path_note(self.identity, self._shortcuts or probe.FAST,
                                        self.one_by_one, experiments)

    def key(self, job: RenderJob) -> str:
        """The content hash that names this job's rendered manifest in the cache."""
        values: list[str] = []
        for path in job.values_files:
            known = self.known_hash(path)
            if known is None:
                try:
                    known = content_hash(path.read_bytes())
                except OSError:
                    known = f"missing:{path}"
            values.append(known)
        release = (job.name, job.namespace, job.kube_version or "", ",".join(job.api_versions))
        return self.keys.render(self.identity.key, self.chart(job.chart).digest, release,
                                values)

    def cached(self, job: RenderJob) -> str | None:
        """The job's manifest from the cache, if it was rendered before."""
        return self.cache.get("render", self.key(job))

    def chart(self, path: Path) -> ChartInfo:
        if path not in self._charts:  # keyed by the path as given, then by the real path
            real = path.resolve()
            info = next((c for c in self._charts.values() if c.path == real), None)
            self._charts[path] = info or ChartInfo(real)
        return self._charts[path]

    def defaults_agree(self, chart: ChartInfo) -> bool:
        """Does helm read the chart's values.yaml as tfgen does (`chart.defaults`)? Asked once
        per chart and helm version: a chart that prints its own values, rendered by helm."""
        key = self.keys.chart_defaults(self.identity.key, chart.digest)
        known = self._defaults.get(key) or self.cache.get("chart-defaults", key)
        if known is None:
            self.stats.helm_processes += 1
            known = str(probe.reads_defaults_alike(self.helm, chart.path, chart.defaults))
            self.cache.put("chart-defaults", key, known)
        if key not in self._defaults and known != "True":
            self.one_by_one.append(os.path.relpath(chart.path / "values.yaml"))
        self._defaults[key] = known
        return known == "True"

    # -- one experiment per process: the reference behaviour, and the fallback -------------
    def render_single(self, job: RenderJob) -> RenderResult:
        self.stats.helm_processes += 1
        try:
            text = helm_mod.template(job, helm=self.helm)
        except HelmError as exc:
            return RenderResult(job, error=exc.message)
        return RenderResult(job, manifest=canonical_manifest(text))

    # -- many experiments per process -------------------------------------------------------
    @staticmethod
    def over_defaults(merged: dict[str, Any] | None, chart: ChartInfo) -> dict[str, Any] | None:
        """A job's merged value files (`values.files_merged`) as helm computes its values:
        coalesced over the chart's defaults (None stays None)."""
        return None if merged is None else coalesce(merged, chart.defaults)

    def batch_size(self, count: int) -> int:
        """Experiments per helm process for `count` that share a chart: small sets in one
        process (each costs ~65 ms to start), large ones spread over the workers."""
        return min(self.chunk_size, max(MIN_CHUNK, -(-count // self.workers)))

    def umbrella_command(
        self, folder: Path, job_values: Sequence[dict[str, Any]], chart: ChartInfo,
        namespace: str, kube_version: str | None, api_versions: tuple[str, ...],
    ) -> list[str]:
        """Write the umbrella chart for one batch in `folder` (`write_umbrella`); the helm
        command rendering it (also what bench/ times as "helm alone")."""
        umbrella = write_umbrella(folder, job_values, chart)
        job = RenderJob(UMBRELLA, namespace, umbrella, kube_version=kube_version,
                        api_versions=api_versions)
        return helm_mod.template_command(
            self.helm, job,
            # every alias passed the values schema already (see the module docstring)
            skip_schema_validation=(chart.values_validator is not None
                                    and self.shortcuts.skip_schema),
        )

    def _batches(self, count: int, chart: ChartInfo) -> bool:
        """Whether `count` jobs of this chart share a helm process (`defaults_agree` asked)."""
        return (count > 1 and chart.batchable and self.shortcuts.batch
                and self.defaults_agree(chart))

    def _checked_values(self, read: Sequence[dict[str, Any] | None], chart: ChartInfo
                        ) -> tuple[list[dict[str, Any]], list[int]]:
        """The jobs' values as helm computes them, and the indices of the jobs to render alone
        (values unreadable or failing the values schema: helm's own verdict and message)."""
        validator = chart.values_validator
        checked: list[dict[str, Any]] = []
        alone: list[int] = []
        for index, merged in enumerate(read):
            values = self.over_defaults(merged, chart)
            if values is None or (validator is not None and not validator.is_valid(values)):
                alone.append(index)
            else:
                checked.append(values)
        return checked, alone

    def _render_apart(self, jobs: Sequence[RenderJob], alone: Sequence[int],
                      folder: Path) -> list[RenderResult]:
        """The jobs at `alone` (ascending) one by one, the others together again, in order."""
        by_index = {i: self.render_single(jobs[i]) for i in alone}
        keep = [i for i in range(len(jobs)) if i not in by_index]
        passed = self._render_group([jobs[i] for i in keep], folder) if keep else []
        by_index.update(zip(keep, passed, strict=True))
        return [by_index[i] for i in range(len(jobs))]

    def _after_failure(self, jobs: Sequence[RenderJob], error: HelmError,
                       folder: Path) -> list[RenderResult]:
        """A batch helm failed, again: the subcharts helm names (`charts/e00042/...`, `e00042:`)
        alone for their own message, the rest together; bisected when it names none."""
        named = {i for i in aliases_named(error.message) if i < len(jobs)}
        if named:
            return self._render_apart(jobs, sorted(named), folder)
        middle = len(jobs) // 2
        return (self._render_group(jobs[:middle], folder)
                + self._render_group(jobs[middle:], folder))

    def _render_group(self, jobs: Sequence[RenderJob], folder: Path) -> list[RenderResult]:
        """Render jobs sharing chart/kube version/api versions, their umbrella chart written in
        `folder` (one batch at a time uses it); bisect on failure."""
        chart = self.chart(jobs[0].chart)
        if not self._batches(len(jobs), chart):
            return [self.render_single(job) for job in jobs]
        read = [files_merged(job.values_files, self.written) for job in jobs]
        job_values, alone = self._checked_values(read, chart)
        if alone:
            return self._render_apart(jobs, alone, folder)
        try:
            cmd = self.umbrella_command(folder / chart.digest, job_values, chart,
                                        jobs[0].namespace, jobs[0].kube_version,
                                        jobs[0].api_versions)
            self.stats.helm_processes += 1
            text = helm_mod.run(cmd)
        except HelmError as exc:
            return self._after_failure(jobs, exc, folder)
        parts = split_umbrella(text, chart.name)
        return [RenderResult(job, manifest=parts.get(alias(index), ""),
                             values=None if merged is None else chart_facts.job_values(merged))
                for index, (job, merged) in enumerate(zip(jobs, read, strict=True))]

    def render(self, jobs: Sequence[RenderJob], on_progress: Progress | None = None
               ) -> list[RenderResult]:
        """Render every job (cache first); results in the order of `jobs`."""
        results: dict[int, RenderResult] = {}
        self.render_each(jobs, results.__setitem__, on_progress)
        return [results[i] for i in range(len(jobs))]

    def _not_cached(self, jobs: Sequence[RenderJob], keys: Sequence[str],
                    on_result: OnResult) -> dict[Group, Pending]:
        """Hand each cached manifest to `on_result`; the others' (index, key), grouped by
        what one helm process can render together (chart, Kubernetes and API versions)."""
        todo: dict[Group, Pending] = {}
        for start in range(0, len(jobs), 500):  # the cached manifests, a slice at a time
            known = self.cache.get_many("render", keys[start:start + 500])
            for index in range(start, min(start + 500, len(jobs))):
                job, key = jobs[index], keys[index]
                if key in known:
                    on_result(index, RenderResult(job, manifest=known[key]))
                    self.stats.cached += 1
                    continue
                group = (self.chart(job.chart).path, job.kube_version, job.api_versions)
                todo.setdefault(group, []).append((index, key))
        return todo

    def _chunks(self, jobs: Sequence[RenderJob], todo: Mapping[Group, Pending]) -> list[Pending]:
        """The jobs to render (`_not_cached`'s groups), in batches of one helm process each."""
        chunks: list[Pending] = []
        for members in todo.values():
            chart = self.chart(jobs[members[0][0]].chart)
            self._batches(len(members), chart)  # helm asked once, here, not by every worker
            size = self.batch_size(len(members))
            chunks += [members[i:i + size] for i in range(0, len(members), size)]
        return chunks

    def render_each(self, jobs: Sequence[RenderJob], on_result: OnResult,
                    on_progress: Progress | None = None,
                    keys: Sequence[str] | None = None) -> None:
        """Render every job (cache first), handing each result to `on_result(index, result)`
        as soon as its helm batch finishes and keeping none: a caller that judges and drops
        each manifest holds a few batches in memory, never the whole repository's. `keys`:
        the jobs' render keys (`key`), when the caller has them already."""
        todo = self._not_cached(
            jobs, [self.key(job) for job in jobs] if keys is None else keys, on_result)
        hits = len(jobs) - sum(map(len, todo.values()))
        if on_progress and hits:
            on_progress(hits)
        chunks = self._chunks(jobs, todo)

        def work(chunk: Pending) -> list[tuple[int, str, RenderResult]]:
            folder = folders.get()
            try:
                rendered = self._render_group([jobs[i] for i, _ in chunk], folder)
            finally:
                folders.put(folder)
            if on_progress:
                on_progress(len(chunk))
            return [(i, key, res) for (i, key), res in zip(chunk, rendered, strict=True)]

        waiting = iter(chunks)
        with (tempfile.TemporaryDirectory(prefix="tfgen-batch-") as workspace,
              ThreadPoolExecutor(max_workers=self.workers) as pool):
            # A folder per worker, each batch's umbrella chart written in a free one: the
            # chart is copied once per folder, not per batch, and no folder is made and
            # removed per batch (on some disks an rmdir takes a millisecond: 12 ms a batch).
            folders: queue.SimpleQueue[Path] = queue.SimpleQueue()
            for number in range(self.workers):
                folders.put(Path(workspace, str(number)))
            # At most IN_FLIGHT batches per worker are started and not yet taken: helm never
            # waits for work, and when the results are judged more slowly than helm renders
            # them, finished batches (manifests and values) do not pile up in memory.
            running = {pool.submit(work, chunk)
                       for chunk in itertools.islice(waiting, IN_FLIGHT * self.workers)}
            while running:
                # taken as they finish, whatever their order: a finished batch never waits in
                # memory behind a slower one
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    for index, key, result in future.result():
                        self.stats.rendered += 1
                        if not result.error:
                            self.cache.put("render", key, result.manifest)
                        on_result(index, result)
                    # written per batch: the pending entries would otherwise hold every manifest
                    self.cache.flush()
                    following = next(waiting, None)
                    if following is not None:
                        running.add(pool.submit(work, following))
