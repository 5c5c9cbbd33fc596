"""What an experiment becomes in the cluster: its pods, addresses and TF_CONFIG.

`explain_spec` takes one experiment file through the real chain (validation with the repo's
defaults, chart values, a real `helm template` of charts/tfjob-experiment) and reads the
rendered TFJob with `tfconfig`, so what it shows is what Argo CD would apply and what the
training operator would inject; `explain_runs` does so for every run of a sweep (one TFJob
each) from one render. `formats` shows the result.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import InputError, OptionsError, ProblemsFound
from ..gate.documents.manifests import ManifestValidator, parse_manifest
from ..gate.helm import command as helm
from ..problems import Problem, errors_of, tally
from ..render.generated import dump_yaml
from ..repo import chart, layout, naming, resources, runtimes
from ..repo.runtimes import tfconfig
from ..validate import validate_repo
from ..validate.experiment import sweep
from ..validate.rules.values import build_values
from ..words import counted


@dataclass
class Explanation:
    """The rendered objects of one experiment and the pods of its TFJob."""

    job: str
    namespace: str
    pods: list[tfconfig.Pod]
    tfjob: dict[str, Any]  # the TFJob the training operator would run (a JobSet's as one)
    runtime: str = runtimes.DEFAULT.name
    objects: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    run: str = ""  # a sweep's run: its parameter values (`lr=0.1, batch=64`)
    # The repository's program that reads TF_CONFIG, when it holds one (tfgen's own does):
    # notes point at it only where it exists.
    example: str = ""

    def find(self, kind: str, component: str | None = None) -> dict[str, Any] | None:
        """First rendered object of `kind` (and app.kubernetes.io/component), if any."""
        for obj in self.objects:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if obj.get("kind") == kind and (
                component is None or labels.get("app.kubernetes.io/component") == component
            ):
                return obj
        return None

    @property
    def mount_path(self) -> str:
        return str((self.values.get("storage") or {}).get("mountPath") or _first_mount(self.pods))

    @property
    def claim(self) -> str:
        for pod in self.pods:
            for mount in pod.mounts:
                if mount.source.startswith("pvc/"):
                    return mount.source[len("pvc/") :]
        return ""

    @property
    def log_dir(self) -> str:
        """The TensorBoard log directory inside the volume ('' when TensorBoard is off)."""
        tb = self.values.get("tensorboard") or {}
        if not tb.get("enabled", True):
            return ""
        own = [r for r in self.values.get("runs") or [] if r.get("name") == self.job]
        return str(own[0]["logDir"] if own else tb.get("logDir") or "")


def _first_mount(pods: Sequence[tfconfig.Pod]) -> str:
    return next((m.mount_path for p in pods for m in p.mounts), "")


def parse_objects(rendered: str) -> list[dict[str, Any]]:
    """The objects of a multi-document `helm template` output (empty documents dropped), read
    as the gate reads them."""
    return [obj.doc for obj in parse_manifest(rendered)]


def explain_objects(
    objects: list[dict[str, Any]],
    *,
    cluster_domain: str = "",
    values: Mapping[str, Any] | None = None,
    source: str = "",
    validator: ManifestValidator | None = None,
    job: str | None = None,
) -> Explanation:
    """Explain already-rendered objects: the TFJob among them (the one named `job`, for a
    sweep's run) gives the pods. With a `validator`, the TFJob is first checked as the gate
    checks it: the chart is the repository's own, so what it renders is input like any other."""
    runtime = runtimes.of_values(values or {})
    where = source or "rendered chart"
    tfjob = _the_job(objects, values, job, runtime, where)
    runtime = runtimes.of_object(tfjob.get("apiVersion"), tfjob.get("kind")) or runtime
    if validator is not None:
        _check_as_the_gate(tfjob, runtime, validator, where)
    meta = tfjob.get("metadata") or {}
    return Explanation(
        job=str(meta.get("name", "")),
        namespace=str(meta.get("namespace") or "default"),
        pods=tfconfig.pods(runtime.as_tfjob(tfjob), cluster_domain),
        tfjob=runtime.as_tfjob(tfjob),
        runtime=runtime.name,
        objects=objects,
        values=dict(values or {}),
        source=source,
    )


def _the_job(objects: list[dict[str, Any]], values: Mapping[str, Any] | None, job: str | None,
             runtime: runtimes.Runtime, where: str) -> dict[str, Any]:
    """The one job of the rendered objects (the one named `job`, for a sweep's run);
    InputError when the experiment is retired (it renders none) or there is not one."""
    tfjobs = [o for o in objects if runtimes.of_object(o.get("apiVersion"), o.get("kind"))]
    if not tfjobs and _retired(values):
        raise InputError(f"{where}: the experiment is retired: it runs "
                         f"no {runtime.kind} any more (rerun it under a new name: `tfgen rerun`)")
    if job is not None:
        tfjobs = [o for o in tfjobs if (o.get("metadata") or {}).get("name") == job]
    if len(tfjobs) != 1:
        raise InputError(f"{where}: expected one {runtime.kind}, found {len(tfjobs)}")
    return tfjobs[0]


def _retired(values: Mapping[str, Any] | None) -> bool:
    """Whether the chart values are a retired experiment's (whose chart renders no job)."""
    return values is not None and values.get(chart.LIFECYCLE_KEY) == chart.RETIRED


def _check_as_the_gate(tfjob: dict[str, Any], runtime: runtimes.Runtime,
                       validator: ManifestValidator, where: str) -> None:
    """ProblemsFound when the validator refuses the job, as the gate would: the chart is the
    repository's own, so what it renders is input like any other."""
    errors = validator.errors(tfjob)
    if errors:
        meta = tfjob.get("metadata")
        name = meta.get("name", "") if isinstance(meta, dict) else ""
        raise ProblemsFound(
            [Problem(where, pointer=f"{runtime.kind}/{name} {pointer}", message=message)
             for pointer, message in errors],
            f"the chart renders a {runtime.kind} {runtime.controller} would refuse "
            f"({counted(len(errors), 'problem')}); fix the chart",
        )


def render_values(
    values: Mapping[str, Any],
    *,
    chart: Path,
    kube_version: str | None = None,
    helm_binary: str | None = None,
) -> list[dict[str, Any]]:
    """The chart rendered with these values through the real helm: its objects."""
    experiment = values.get("experiment") or {}
    name, namespace = str(experiment.get("name", "")), str(experiment.get("namespace", ""))
    with tempfile.TemporaryDirectory(prefix="tfgen-explain-") as tmp:
        values_file = Path(tmp) / "values.yaml"
        values_file.write_text(dump_yaml(dict(values)), encoding="utf-8")
        job = helm.RenderJob(name, namespace, chart, (values_file,), kube_version=kube_version)
        rendered = helm.template(job, helm=helm_binary)
    return parse_objects(rendered)


def explain_values(
    values: Mapping[str, Any],
    *,
    chart: Path,
    cluster_domain: str = "",
    kube_version: str | None = None,
    source: str = "",
    helm_binary: str | None = None,
) -> Explanation:
    """Render the chart with these values through the real helm and explain the result; the
    rendered TFJob is validated strictly first (Kubernetes `kube_version`, tfgen's schemas)."""
    objects = render_values(values, chart=chart, kube_version=kube_version,
                            helm_binary=helm_binary)
    validator = ManifestValidator(kube_version, resources.schema_dir()) if kube_version else None
    return explain_objects(
        objects, cluster_domain=cluster_domain, values=values, source=source,
        validator=validator,
    )


EXAMPLE_PROGRAM = "examples/mnist/main.py"


def example_program(root: Path) -> str:
    """EXAMPLE_PROGRAM when the repository at `root` holds it, else ''."""
    return EXAMPLE_PROGRAM if (root / EXAMPLE_PROGRAM).is_file() else ""


def chart_path(root: Path) -> Path:
    """The chart Argo CD renders for the repository at `root`, else the one tfgen ships."""
    local = root / layout.CHART_PATH
    return local if local.is_dir() else resources.chart_dir()


def explain_spec(spec: Path | str, run: str | None = None) -> Explanation:
    """One experiment file -> validated Experiment -> values -> helm template -> pods.

    A sweep of several runs needs `run` (a suffix): this is one TFJob. Raises ProblemsFound
    with every problem when the file does not validate.
    """
    return explain_runs(spec, run, one=True)[0]


def explain_runs(
    spec: Path | str, run: str | None = None, *, one: bool = False
) -> list[Explanation]:
    """Every run's explanation (the one `run` names), from one helm render: a spec without
    sweep is one run. `one`: the caller needs a single TFJob (OptionsError listing the runs)."""
    if not str(spec).strip():  # Path("") is ".", the whole folder: not what was meant
        raise OptionsError("the spec path is empty; name an experiment file")
    path = Path(spec)
    if not path.exists() and not path.is_symlink():
        raise OptionsError(f"{spec}: no such file")
    if path.is_dir():  # validate would read every spec in it: one experiment is meant here
        raise OptionsError(f"{spec}: is a directory; give one experiment, by its spec file or "
                           "its name")
    # Whatever else the path is (a FIFO, a link out of the repository), the spec stage says
    # so as a problem of that file, exactly as `tfgen validate` would.
    result = validate_repo([path])
    if errors_of(result.problems):  # (warnings alone are `tfgen validate`'s to say)
        raise ProblemsFound(
            result.problems,
            f"{tally(result.problems)}: fix the spec, then explain it",
        )
    if not result.experiments:
        raise InputError(f"{spec}: no experiment in this file")
    experiment = result.experiments[0]
    config = result.config
    assert config is not None  # validate_repo always loads one
    chosen = sweep.select(experiment.spec, run, one=one)
    values = build_values(experiment.data, cluster_domain=config.cluster_domain)
    kube_version = config.kubernetes_version
    objects = render_values(values, chart=chart_path(config.root), kube_version=kube_version,
                            helm_binary=helm.find_helm(root=config.root))
    validator = ManifestValidator(kube_version, resources.schema_dir())
    return [
        replace(explain_objects(objects, cluster_domain=config.cluster_domain, values=values,
                                source=str(spec), validator=validator,
                                # a spec without sweep has one TFJob, whatever the chart
                                # names it; a sweep's run is found by its name
                                job=naming.job_name(experiment.name, r.suffix)
                                if r.suffix else None),
                run=r.label(), example=example_program(config.root))
        for r in chosen
    ]
