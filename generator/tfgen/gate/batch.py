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

A batch hands helm the values as tfgen read them, not the committed files that Argo CD
gives helm (go-yaml v2, YAML 1.1 rules: an unquoted `y` is a boolean there and a string here).
So only a values file in the writer's canonical form is batched: comment lines of printable
ASCII (the header), then exactly `dump_yaml` of what was read from it (`read_canonical`). The
writer quotes everything the two parsers could read differently, and tests/test_yaml_types.py
shows helm reading such files exactly as written, so for these the values are the same either
way. Any other values file (edited by hand, written by another tool) is rendered alone by a
plain `helm template --values <file>` with helm's own schema check: the verdict and message
Argo CD's repo-server would give. tests/test_batch.py compares the two ways byte for byte.
The chart's own values.yaml is hand-written. tfgen reads it by go-yaml's rules
(`helmvalues.load_yaml_file`), and before a chart is batched helm is asked once (per chart and
helm version, then cached) what its defaults are; if helm reads them otherwise than tfgen does
(a `!!binary` tag, a key that is not text), that chart's experiments are rendered one by one.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EnvironmentProblem, HelmError
from ..repo import chart as chart_facts
from ..repo.cache import Cache, tool_version
from ..repo.keys import CacheKeys, content_hash, tool_digest
from . import helm as helm_mod
from .applications import ResolvedApplication
from .helm import RenderJob
from .helmvalues import (
    canonical_values,
    coalesce,
    merge_values,
    typed,
)
from .umbrella import (
    UMBRELLA,
    ChartInfo,
    alias,
    aliases_named,
    canonical_manifest,
    split_umbrella,
    write_umbrella,
)

MIN_CHUNK = 25
# Batches started and not yet taken, per worker: one rendering, one finished and waiting.
IN_FLIGHT = 2
Progress = Callable[[int], None]


def jobs_for(applications: Sequence[ResolvedApplication], kube_version: str) -> list[RenderJob]:
    """One helm run per Application, with exactly the Application's parameters."""
    return [
        RenderJob(name=app.release_name, namespace=app.namespace, chart=app.chart_dir,
                  values_files=tuple(app.value_files), kube_version=kube_version)
        for app in applications
    ]


@dataclass
class RenderResult:
    """The canonical manifest of one job, or helm's error for it; `values`: what the judge
    reads of the job's value files merged (`chart.job_values`), when the batch read them (then
    the judge need not read them again; a batch waiting to be judged holds no more)."""

    job: RenderJob
    manifest: str = ""
    error: str = ""
    values: dict[str, Any] | None = None


@dataclass
class BatchStats:
    """What a renderer did: helm processes started, jobs rendered, jobs found in the cache."""

    helm_processes: int = 0
    cached: int = 0
    rendered: int = 0


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
        self._helm_version: str | None = None

    @property
    def helm_version(self) -> str:
        if self._helm_version is None:
            if not Path(self.helm).exists() and not shutil.which(self.helm):
                raise EnvironmentProblem(f"helm not found at {self.helm}; {helm_mod.INSTALL_HINT}")
            self._helm_version = tool_version(self.cache, self.helm, ["version", "--short"])
        return self._helm_version

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
        return self.keys.render(self.helm_version, self.chart(job.chart).digest, release, values)

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
        key = self.keys.chart_defaults(self.helm_version, chart.digest)
        known = self._defaults.get(key) or self.cache.get("chart-defaults", key)
        if known is None:
            with tempfile.TemporaryDirectory(prefix="tfgen-defaults-") as tmp:
                probe = Path(tmp) / "probe"
                (probe / "templates").mkdir(parents=True)
                (probe / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.0.0\n",
                                                  encoding="utf-8")
                shutil.copyfile(chart.path / "values.yaml", probe / "values.yaml")
                (probe / "templates" / "values.txt").write_text(
                    "values: {{ toJson .Values | b64enc }}\n", encoding="utf-8")
                self.stats.helm_processes += 1
                try:
                    out = helm_mod.run([self.helm, "template", "probe", str(probe),
                                        "--show-only", "templates/values.txt"])
                    line = next(x for x in out.splitlines() if x.startswith("values: "))
                    seen = json.loads(base64.b64decode(line.removeprefix("values: ")))
                    known = str(typed(seen) == typed(chart.defaults))
                except (HelmError, ValueError, StopIteration):
                    known = "False"  # helm refuses the file: the single renders say why
            self.cache.put("chart-defaults", key, known)
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
    def file_values(job: RenderJob) -> dict[str, Any] | None:
        """The job's value files merged as helm merges them, or None when one is not in
        canonical form: helm must read that one itself."""
        merged: dict[str, Any] = {}
        for path in job.values_files:
            try:
                data = canonical_values(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                data = None  # helm says what is wrong with the file
            if data is None:
                return None
            merged = merge_values(merged, data)
        return merged

    @staticmethod
    def over_defaults(merged: dict[str, Any] | None, chart: ChartInfo) -> dict[str, Any] | None:
        """A job's merged value files (`file_values`) as helm computes its values: coalesced
        over the chart's defaults (None stays None)."""
        return None if merged is None else coalesce(merged, chart.defaults)

    def batch_size(self, count: int) -> int:
        """Experiments per helm process for `count` that share a chart: small sets in one
        process (each costs ~65 ms to start), large ones spread over the workers."""
        return min(self.chunk_size, max(MIN_CHUNK, -(-count // self.workers)))

    def umbrella_command(
        self, tmp: Path, job_values: Sequence[dict[str, Any]], chart: ChartInfo,
        namespace: str, kube_version: str | None, api_versions: tuple[str, ...],
    ) -> list[str]:
        """Write the umbrella chart for one batch under `tmp`; the helm command rendering it
        (also what bench/ times as "helm alone")."""
        umbrella = write_umbrella(tmp, job_values, chart)
        job = RenderJob(UMBRELLA, namespace, umbrella, kube_version=kube_version,
                        api_versions=api_versions)
        return helm_mod.template_command(
            self.helm, job,
            # every alias passed the values schema already (see the module docstring)
            skip_schema_validation=chart.values_validator is not None,
        )

    def _render_chunk(
        self, jobs: Sequence[RenderJob], job_values: Sequence[dict[str, Any]], chart: ChartInfo,
        kube_version: str | None, api_versions: tuple[str, ...],
    ) -> str:
        with tempfile.TemporaryDirectory(prefix="tfgen-batch-") as tmp:
            cmd = self.umbrella_command(Path(tmp), job_values, chart, jobs[0].namespace,
                                        kube_version, api_versions)
            self.stats.helm_processes += 1
            return helm_mod.run(cmd)

    def _render_group(self, jobs: Sequence[RenderJob]) -> list[RenderResult]:
        """Render jobs sharing chart/kube version/api versions; bisect on failure."""
        chart = self.chart(jobs[0].chart)
        if len(jobs) == 1 or not chart.batchable or not self.defaults_agree(chart):
            return [self.render_single(job) for job in jobs]
        read = [self.file_values(job) for job in jobs]
        values_of = [self.over_defaults(merged, chart) for merged in read]
        validator = chart.values_validator
        alone = [i for i, values in enumerate(values_of)
                 if values is None or (validator is not None and not validator.is_valid(values))]
        if alone:
            by_index = {i: self.render_single(jobs[i]) for i in alone}
            keep = [i for i in range(len(jobs)) if i not in by_index]
            passed = self._render_group([jobs[i] for i in keep]) if keep else []
            by_index.update(zip(keep, passed, strict=True))
            return [by_index[i] for i in range(len(jobs))]
        job_values = [values for values in values_of if values is not None]
        try:
            text = self._render_chunk(jobs, job_values, chart, jobs[0].kube_version,
                                      jobs[0].api_versions)
        except HelmError as exc:
            # helm names the failing subcharts (`charts/e00042/templates/...` for a template
            # error, `e00042:` in a schema report): render those alone for their own message
            # and the rest again together; bisect when it names none.
            named = {i for i in aliases_named(exc.message) if i < len(jobs)}
            if named:
                failing = [jobs[i] for i in sorted(named)]
                rest = [job for i, job in enumerate(jobs) if i not in named]
                by_job = {id(job): res for job, res in zip(
                    failing, [self.render_single(job) for job in failing], strict=True)}
                by_job.update({id(job): res for job, res in zip(
                    rest, self._render_group(rest) if rest else [], strict=True)})
                return [by_job[id(job)] for job in jobs]
            middle = len(jobs) // 2
            return self._render_group(jobs[:middle]) + self._render_group(jobs[middle:])
        parts = split_umbrella(text, chart.name)
        return [
            RenderResult(job, manifest=parts.get(alias(index), ""),
                         values=None if merged is None else chart_facts.job_values(merged))
            for index, (job, merged) in enumerate(zip(jobs, read, strict=True))
        ]

    def render(
        self, jobs: Sequence[RenderJob], on_progress: Progress | None = None
    ) -> list[RenderResult]:
        """Render every job (cache first); results in the order of `jobs`."""
        results: dict[int, RenderResult] = {}
        self.render_each(jobs, results.__setitem__, on_progress)
        return [results[i] for i in range(len(jobs))]

    def _not_cached(self, jobs: Sequence[RenderJob],
                    on_result: Callable[[int, RenderResult], None]
                    ) -> dict[tuple[Path, str | None, tuple[str, ...]], list[tuple[int, str]]]:
        """Hand each cached manifest to `on_result`; the others' (index, key), grouped by
        what one helm process can render together (chart, Kubernetes and API versions)."""
        todo: dict[tuple[Path, str | None, tuple[str, ...]], list[tuple[int, str]]] = {}
        keys = [self.key(job) for job in jobs]
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

    def _chunks(self, jobs: Sequence[RenderJob],
                todo: Mapping[Any, list[tuple[int, str]]]) -> list[list[tuple[int, str]]]:
        """The jobs to render (`_not_cached`'s groups), in batches of one helm process each."""
        chunks: list[list[tuple[int, str]]] = []
        for members in todo.values():
            chart = self.chart(jobs[members[0][0]].chart)
            if len(members) > 1 and chart.batchable:
                self.defaults_agree(chart)  # asked once, here, rather than by every worker
            size = self.batch_size(len(members))
            chunks += [members[i:i + size] for i in range(0, len(members), size)]
        return chunks

    def render_each(
        self, jobs: Sequence[RenderJob], on_result: Callable[[int, RenderResult], None],
        on_progress: Progress | None = None,
    ) -> None:
        """Render every job (cache first), handing each result to `on_result(index, result)`
        as soon as its helm batch finishes and keeping none: a caller that judges and drops
        each manifest holds a few batches in memory, never the whole repository's."""
        todo = self._not_cached(jobs, on_result)
        hits = len(jobs) - sum(map(len, todo.values()))
        if on_progress and hits:
            on_progress(hits)
        chunks = self._chunks(jobs, todo)

        def work(chunk: list[tuple[int, str]]) -> list[tuple[int, str, RenderResult]]:
            rendered = self._render_group([jobs[i] for i, _ in chunk])
            if on_progress:
                on_progress(len(chunk))
            return [(i, key, res) for (i, key), res in zip(chunk, rendered, strict=True)]

        waiting = iter(chunks)
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
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
