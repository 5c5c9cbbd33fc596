"""Which of the batch renderer's shortcuts a helm build takes: verified on the build itself.

The batch renderer (`batch`) takes two shortcuts, each resting on how helm behaves: many
experiments in one helm process (an umbrella chart, split back per experiment), and in such a
batch tfgen's check of the values schema instead of helm's own (`--skip-schema-validation`).
What a release does moves between releases: helm 3.17 and 3.18 refuse, in their schema check,
a value holding U+007F that later releases and their own template engine take, so a batch that
skipped their check would pass what their `helm template` refuses; a helm before 3.16 has no
`--skip-schema-validation` at all. So rather than trust a list of release names, tfgen renders
a small probe chart with each helm build both ways, one experiment per process (the way Argo
CD's repo-server runs helm) and through the batch renderer with the shortcuts, and takes the
shortcuts that give byte for byte the same manifests and the same verdicts: the fast path
(`FAST`), batches with helm's own schema check (`HELMS_SCHEMA`), or one experiment per process
(`ONE_BY_ONE`). The answer is remembered by the build's content hash (`helm.HelmIdentity`).

Where a helm cannot take the fast path, `slow_path_note` says so in one line: why, what it
costs and how to get the fast path.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ...errors import HelmError
from ...render.generated import dump_yaml
from ...words import counted
from . import command as helm_mod
from .command import INSTALL_HINT, HelmIdentity, RenderJob
from .values import typed


@dataclass(frozen=True)
class Shortcuts:
    """What the batch renderer may do with a helm: `batch` many experiments per process,
    and in a batch `skip_schema`, helm's own values-schema check (tfgen checks first)."""

    name: str
    batch: bool
    skip_schema: bool


FAST = Shortcuts("fast", batch=True, skip_schema=True)
HELMS_SCHEMA = Shortcuts("helm's schema check", batch=True, skip_schema=False)
ONE_BY_ONE = Shortcuts("one by one", batch=False, skip_schema=False)
BY_NAME = {s.name: s for s in (FAST, HELMS_SCHEMA, ONE_BY_ONE)}

# Why a build is off the fast path, and what that costs in helm CPU per experiment against a
# batch that skips helm's schema check (measured with helm 4.2.3 and 3.18.0, 600 experiments of
# bench/: 4.9-5.2 ms a batch, 7.7-8.3 ms with helm's own check, 41-46 ms one process each).
OFF_THE_FAST_PATH = {
    HELMS_SCHEMA.name: ("checks values against a chart's schema otherwise than tfgen does",
                        "its batches run helm's own check, about 1.6 times the helm time"),
    ONE_BY_ONE.name: ("does not render tfgen's batches as it renders one experiment",
                      "each experiment gets a helm process, about 9 times the helm time"),
}

_PATTERN = "^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$"  # the chart's single-line rule
_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
    "values.yaml": "experiment: {name: '', owner: ''}\ntext: {}\nextra: {a: 1, b: 2}\n",
    "values.schema.json": json.dumps({
        "type": "object", "additionalProperties": False,
        "properties": {
            "experiment": {"type": "object", "additionalProperties": False, "properties": {
                "name": {"type": "string"}, "owner": {"type": "string", "pattern": _PATTERN}}},
            "text": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object"},
        }}),
    "templates/configmap.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: {{ required \"experiment.name is required\" .Values.experiment.name }}\n"
        "  annotations: {owner: {{ .Values.experiment.owner | quote }}}\n"
        "data:\n  extra: {{ toJson .Values.extra | quote }}\n"
        "  {{- range $key, $value := .Values.text }}\n  {{ $key }}: {{ $value | quote }}\n"
        "  {{- end }}\n"),
    "templates/service.yaml": (
        "# a template's own separator, kept in its output\n---\napiVersion: v1\nkind: Service\n"
        "metadata:\n  name: {{ .Values.experiment.name }}\nspec:\n  ports: [{port: 80}]\n"),
    "templates/NOTES.txt": "not rendered by helm template\n",
}
# Text that helm releases have read, escaped or checked in different ways.
_TEXTS = ["del\x7f", "nel\x85line", "ls\u2028sep", "tab\there", "line\nbreak", "cr\rhere",
          "bom\ufeff", "emoji \U0001f600", "y", "", " ", "{{ .name }}", "a: b", "- a", "#x"]
_VALUES: list[dict[str, Any]] = [
    # a null deletes a chart default: helm 4 ignores a parent's nulls in subcharts
    {"experiment": {"name": "plain", "owner": "a@example.com"}, "extra": {"a": None}},
    {"experiment": {"name": "texts", "owner": "b@example.com"},
     "text": {f"t{i}": text for i, text in enumerate(_TEXTS)}, "extra": {"c": 3}},
    # refused by tfgen's schema check, so rendered alone: helm's own verdict
    {"experiment": {"name": "owner", "owner": "nel\x85line"}},
    {"experiment": {"name": "other", "owner": "c@example.com"}, "text": {"k": "v"}},
]
_PLAIN = (0, 3)  # values every helm renders, and tfgen batches


class Renderer(Protocol):
    """What the probe asks of a batch renderer (`batch.BatchRenderer`)."""

    @property
    def stats(self) -> Any: ...

    def render(self, jobs: Sequence[RenderJob]) -> Sequence[Any]: ...

    def render_single(self, job: RenderJob) -> Any: ...


def verify(make: Callable[[Shortcuts], Renderer]) -> Shortcuts:
    """The first shortcuts with which the batch renderer `make` builds gives what helm gives
    one experiment per process, on the probe chart; ONE_BY_ONE when none does."""
    with tempfile.TemporaryDirectory(prefix="tfgen-helm-probe-") as tmp:
        jobs = _jobs(Path(tmp))
        alone = make(ONE_BY_ONE)
        with ThreadPoolExecutor(max_workers=4) as pool:  # helm's processes side by side
            singles = [pool.submit(alone.render_single, job) for job in jobs]
            for shortcuts in (FAST, HELMS_SCHEMA):  # the next tried only when one fails
                batched = pool.submit(_batched, make(shortcuts), jobs)
                in_one = pool.submit(_in_one_batch, make(shortcuts), [jobs[i] for i in _PLAIN])
                outcomes = [_outcome(single.result()) for single in singles]
                if any(outcomes[i][1] for i in _PLAIN):
                    return ONE_BY_ONE  # not even the plainest experiments render
                if batched.result() == outcomes and in_one.result():
                    return shortcuts
    return ONE_BY_ONE


def _batched(renderer: Renderer, jobs: Sequence[RenderJob]) -> list[tuple[str, bool]]:
    return [_outcome(result) for result in renderer.render(jobs)]


def _in_one_batch(renderer: Renderer, jobs: Sequence[RenderJob]) -> bool:
    """Whether `jobs` render in two helm processes, the chart's defaults then one batch: a
    helm without `--skip-schema-validation` fails every batch (the renderer then falls back
    to a process each, and the outcomes alone would not show it)."""
    results = renderer.render(jobs)
    return renderer.stats.helm_processes == 2 and not any(r.error for r in results)


def reads_defaults_alike(helm: str, chart: Path, defaults: dict[str, Any]) -> bool:
    """Does helm read the chart's values.yaml as tfgen does (`defaults`)? A chart that
    prints its own values, rendered by helm."""
    with tempfile.TemporaryDirectory(prefix="tfgen-defaults-") as tmp:
        probe = Path(tmp) / "probe"
        (probe / "templates").mkdir(parents=True)
        (probe / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.0.0\n",
                                          encoding="utf-8")
        shutil.copyfile(chart / "values.yaml", probe / "values.yaml")
        (probe / "templates" / "values.txt").write_text(
            "values: {{ toJson .Values | b64enc }}\n", encoding="utf-8")
        try:
            out = helm_mod.run([helm, "template", "probe", str(probe),
                                "--show-only", "templates/values.txt"])
            line = next(x for x in out.splitlines() if x.startswith("values: "))
            seen = json.loads(base64.b64decode(line.removeprefix("values: ")))
        except (HelmError, ValueError, StopIteration):
            return False  # helm refuses the file: the single renders say why
    return typed(seen) == typed(defaults)


def _jobs(folder: Path) -> list[RenderJob]:
    chart = folder / "probe"
    for name, text in _CHART.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text, encoding="utf-8")
    jobs = []
    for values in _VALUES:
        name = values["experiment"]["name"]
        path = folder / f"{name}.yaml"
        path.write_text(dump_yaml(values), encoding="utf-8")  # as tfgen writes values
        jobs.append(RenderJob(name, "probe", chart, (path,)))
    return jobs


def _outcome(result: Any) -> tuple[str, bool]:
    """What a verdict rests on: the manifest, and whether helm refused."""
    return result.manifest, bool(result.error)


def slow_path_note(helm: HelmIdentity, shortcuts: Shortcuts, one_by_one: Sequence[str],
                   experiments: int) -> str | None:
    """One line when this helm is off the fast path (None when it is on it): why, what it
    costs, how to get the fast path. `one_by_one`: the charts whose values.yaml this helm
    reads otherwise than tfgen (their experiments get a helm process each)."""
    which = (f"helm {helm.version} at {helm.path}" if helm.version else
             f"the program at {helm.path} (it names no helm release)")
    if not helm.pinned:
        return (f"{which} is not a helm build itself (a wrapper or a shim runs one), so tfgen "
                "cannot know which helm renders next time and keeps none of its renders: "
                f"every check renders all {counted(experiments, 'experiment')} as a cold "
                "check does. For the fast path, point $TFGEN_HELM at the helm binary itself, "
                f"or {INSTALL_HINT}")
    if shortcuts is not FAST:
        why, cost = OFF_THE_FAST_PATH[shortcuts.name]
        return (f"{which} {why} (seen on a probe chart, once for this build), so {cost} of "
                f"the fast path; the verdicts are the same. For the fast path, {INSTALL_HINT}")
    if one_by_one:
        cost = OFF_THE_FAST_PATH[ONE_BY_ONE.name][1]
        return (f"{which} reads {', '.join(one_by_one)} otherwise than tfgen does (a tag such "
                f"as !!binary, a key that is not text), so {cost} of batches; the verdicts "
                "are the same. For the fast path, write it in plain YAML")
    return None
