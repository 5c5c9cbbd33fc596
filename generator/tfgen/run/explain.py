"""What an experiment becomes in the cluster: its pods, addresses and TF_CONFIG.

`explain_spec` takes one experiment file through the real chain (validation with the repo's
defaults, chart values, a real `helm template` of charts/tfjob-experiment) and reads the
rendered TFJob with `tfconfig`, so what it shows is what Argo CD would apply and what the
training operator would inject. The result formats as a text table with each pod's TF_CONFIG,
as JSON for tools, or as a Mermaid flowchart (pods, Services, claim, volume, TensorBoard) for
READMEs and pull-request comments.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, OptionsError, ProblemsFound
from ..gate import helm
from ..gate.manifests import ManifestValidator, parse_manifest
from ..problems import Problem
from ..render.generated import dump_yaml
from ..render.values import build_values
from ..repo import layout, resources
from ..validate import validate_repo
from ..words import counted
from . import EXPLAIN_FORMATS, tfconfig


@dataclass
class Explanation:
    """The rendered objects of one experiment and the pods of its TFJob."""

    job: str
    namespace: str
    pods: list[tfconfig.Pod]
    tfjob: dict[str, Any]
    objects: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    source: str = ""

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
        return str(tb.get("logDir") or "") if tb.get("enabled", True) else ""


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
) -> Explanation:
    """Explain already-rendered objects: the TFJob among them gives the pods. With a
    `validator`, the TFJob is first checked as the gate checks it: the chart is the
    repository's own, so what it renders is input like any other."""
    tfjobs = [o for o in objects if o.get("kind") == "TFJob"]
    if len(tfjobs) != 1:
        raise InputError(f"{source or 'rendered chart'}: expected one TFJob, found {len(tfjobs)}")
    tfjob = tfjobs[0]
    if validator is not None:
        errors = validator.errors(tfjob)
        if errors:
            where = source or "rendered chart"
            meta = tfjob.get("metadata")
            name = meta.get("name", "") if isinstance(meta, dict) else ""
            raise ProblemsFound(
                [Problem(where, pointer=f"TFJob/{name} {pointer}", message=message)
                 for pointer, message in errors],
                f"the chart renders a TFJob the training operator would refuse "
                f"({counted(len(errors), 'problem')}); fix the chart",
            )
    meta = tfjob.get("metadata") or {}
    return Explanation(
        job=str(meta.get("name", "")),
        namespace=str(meta.get("namespace") or "default"),
        pods=tfconfig.pods(tfjob, cluster_domain),
        tfjob=tfjob,
        objects=objects,
        values=dict(values or {}),
        source=source,
    )


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
    experiment = values.get("experiment") or {}
    name, namespace = str(experiment.get("name", "")), str(experiment.get("namespace", ""))
    with tempfile.TemporaryDirectory(prefix="tfgen-explain-") as tmp:
        values_file = Path(tmp) / "values.yaml"
        values_file.write_text(dump_yaml(dict(values)), encoding="utf-8")
        rendered = helm.template(
            chart, name, namespace, [values_file], kube_version=kube_version, helm=helm_binary
        )
    validator = ManifestValidator(kube_version, resources.schema_dir()) if kube_version else None
    return explain_objects(
        parse_objects(rendered), cluster_domain=cluster_domain, values=values, source=source,
        validator=validator,
    )


def chart_path(root: Path) -> Path:
    """The chart Argo CD renders for the repository at `root`, else the one tfgen ships."""
    local = root / layout.CHART_PATH
    return local if local.is_dir() else resources.chart_dir()


def explain_spec(spec: Path | str) -> Explanation:
    """One experiment file -> validated Experiment -> values -> helm template -> pods.

    Raises ProblemsFound with every problem when the file does not validate.
    """
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
    if result.problems:
        count = len(result.problems)
        raise ProblemsFound(
            result.problems,
            f"{counted(count, 'problem')}: fix the spec, then explain it",
        )
    if not result.experiments:
        raise InputError(f"{spec}: no experiment in this file")
    experiment = result.experiments[0]
    config = result.config
    assert config is not None  # validate_repo always loads one
    values = build_values(experiment.data)
    return explain_values(
        values,
        chart=chart_path(config.root),
        cluster_domain=config.cluster_domain,
        kube_version=config.kubernetes_version,
        source=str(spec),
        helm_binary=helm.find_helm(root=config.root),
    )


# ---------------------------------------------------------------------------------------------
# Formats


def format_explanation(explanation: Explanation, fmt: str) -> str:
    """Render as one of EXPLAIN_FORMATS."""
    if fmt == "json":
        return json.dumps(as_json(explanation), indent=2)
    if fmt == "mermaid":
        return as_mermaid(explanation)
    if fmt == "text":
        return as_text(explanation)
    raise InputError(f"unknown format {fmt!r} (one of {', '.join(EXPLAIN_FORMATS)})")


def as_json(explanation: Explanation) -> dict[str, Any]:
    """`{"job", "namespace", "pods": [...]}`; tfConfig is the exact env value or null."""
    return {
        "job": explanation.job,
        "namespace": explanation.namespace,
        "pods": [
            {
                "name": p.name,
                "replicaType": p.replica_type,
                "index": p.index,
                "address": p.address,
                "gpus": p.gpus,
                "tfConfig": p.tf_config,
            }
            for p in explanation.pods
        ],
    }


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def _volume_text(explanation: Explanation) -> str:
    pv = explanation.find("PersistentVolume")
    claim = explanation.claim or "?"
    where = f"claim {claim}"
    if pv is not None:
        where += f" -> PV {pv['metadata']['name']} ({_nas_text(pv)})"
    else:
        where += " (existing claim, no PV created)"
    return f"{where}, mounted at {explanation.mount_path}"


def _nas_text(pv: Mapping[str, Any]) -> str:
    spec = pv.get("spec") or {}
    if "csi" in spec:
        attrs = spec["csi"].get("volumeAttributes") or {}
        return f"NAS {attrs.get('server', '')}:{attrs.get('path', '')} via CSI"
    if "flexVolume" in spec:
        opts = spec["flexVolume"].get("options") or {}
        return f"NAS {opts.get('server', '')}:{opts.get('path', '')} via FlexVolume"
    if "nfs" in spec:
        return f"NFS {spec['nfs'].get('server', '')}:{spec['nfs'].get('path', '')}"
    return "volume"


def _tensorboard_text(explanation: Explanation) -> str:
    deployment = explanation.find("Deployment", "tensorboard")
    if deployment is None:
        return "TensorBoard: off"
    service = explanation.find("Service", "tensorboard")
    port = ""
    if service is not None:
        ports = (service.get("spec") or {}).get("ports") or [{}]
        port = f", Service {service['metadata']['name']}:{ports[0].get('port', '')}"
    return f"TensorBoard: {deployment['metadata']['name']} reads {explanation.log_dir}{port}"


def as_text(explanation: Explanation) -> str:
    pods = explanation.pods
    lines = [
        f"TFJob {explanation.job} in namespace {explanation.namespace}: "
        f"{counted(len(pods), 'pod')}, one headless Service each",
        "",
    ]
    rows = [["POD", "TYPE", "INDEX", "ADDRESS", "GPUS"]]
    rows += [[p.name, p.replica_type, str(p.index), p.address, str(p.gpus)] for p in pods]
    lines += _table(rows)
    lines += ["", "Volume: " + _volume_text(explanation), _tensorboard_text(explanation), ""]
    if all(p.tf_config is None for p in pods):
        lines.append(
            "TF_CONFIG: none; the training operator sets it only when the job has more than "
            "one replica in total"
        )
        return "\n".join(lines)
    lines.append(
        "TF_CONFIG set by the training operator in each pod (use --format json for the "
        "exact strings):"
    )
    for p in pods:
        lines += ["", f"{p.name}:"]
        lines += ["  " + line for line in pretty_tf_config(p.tf_config or "null")]
    advice = tensorflow_notes(explanation)
    if advice:
        lines += ["", "Notes for the training program:"]
        lines += [f"- {note}" for note in advice]
    return "\n".join(lines)


def tensorflow_notes(explanation: Explanation) -> list[str]:
    """What a TensorFlow 2 program must do with this TF_CONFIG (found by running TF 2.21)."""
    types = {p.replica_type for p in explanation.pods}
    if all(p.tf_config is None for p in explanation.pods):
        return []
    notes = []
    if "Master" in types:
        notes.append(
            "tf.distribute knows the task types chief, worker, ps and evaluator only: read "
            "`master` as `chief` (cluster key and task type), or use the chief role"
        )
    if "Evaluator" in types and "PS" in types:
        notes.append(
            "the evaluator is in every pod's cluster, but it runs no server: remove it from the "
            "cluster before building ParameterServerStrategy, or the coordinator waits for it"
        )
    if notes:
        notes.append("examples/mnist/main.py shows how")
    return notes


def pretty_tf_config(value: str) -> list[str]:
    """A TF_CONFIG as readable JSON: one line per top-level key and per cluster job.

    Still valid JSON with the operator's key order, just spread out like the cluster specs
    people write by hand.
    """
    data = json.loads(value)
    if not isinstance(data, dict):
        return [json.dumps(data)]
    lines = ["{"]
    items = list(data.items())
    for n, (key, item) in enumerate(items):
        comma = "," if n < len(items) - 1 else ""
        if key == "cluster" and isinstance(item, dict) and item:
            lines.append(f"  {json.dumps(key)}: {{")
            jobs = list(item.items())
            for m, (job, addresses) in enumerate(jobs):
                inner = "," if m < len(jobs) - 1 else ""
                lines.append(f"    {json.dumps(job)}: {json.dumps(addresses)}{inner}")
            lines.append("  }" + comma)
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(item)}{comma}")
    lines.append("}")
    return lines


def _label(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def as_mermaid(explanation: Explanation) -> str:
    """A flowchart: Services -> pods -> claim -> volume -> NAS, and TensorBoard on the claim."""
    out = ["flowchart LR"]
    out.append(f"  subgraph tfjob[{_label(f'TFJob {explanation.job} ({explanation.namespace})')}]")
    for i, p in enumerate(explanation.pods):
        gpu = f" · {p.gpus} GPU" if p.gpus else ""
        out.append(f"    pod{i}[{_label(f'{p.name}<br/>{p.replica_type} {p.index}{gpu}')}]")
    out.append("  end")
    for i, p in enumerate(explanation.pods):
        out.append(f"  svc{i}([{_label(f'svc {p.name}:{p.port}')}]) --> pod{i}")
    claim = explanation.claim
    if claim:
        out.append(f"  pvc[({_label(f'PVC {claim}<br/>{explanation.mount_path}')})]")
        for i in range(len(explanation.pods)):
            out.append(f"  pod{i} --> pvc")
        pv = explanation.find("PersistentVolume")
        if pv is not None:
            out.append(f"  pv[({_label('PV ' + pv['metadata']['name'])})]")
            out.append(f"  nas[({_label(_nas_text(pv))})]")
            out.append("  pvc --> pv --> nas")
    deployment = explanation.find("Deployment", "tensorboard")
    if deployment is not None:
        name = deployment["metadata"]["name"]
        out.append(f"  tb[{_label(f'TensorBoard {name}<br/>{explanation.log_dir}')}]")
        if claim:
            out.append("  tb -. read-only .-> pvc")
        service = explanation.find("Service", "tensorboard")
        if service is not None:
            ports = (service.get("spec") or {}).get("ports") or [{}]
            svc = f"svc {service['metadata']['name']}:{ports[0].get('port', '')}"
            out.append(f"  tbsvc([{_label(svc)}]) --> tb")
        ingress = explanation.find("Ingress", "tensorboard")
        if ingress is not None:
            rules = (ingress.get("spec") or {}).get("rules") or [{}]
            host = _label("Ingress " + str(rules[0].get("host", "")))
            out.append(f"  ing{{{{{host}}}}} --> tbsvc")
    return "\n".join(out)
