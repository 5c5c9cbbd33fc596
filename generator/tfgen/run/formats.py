"""How `tfgen explain` shows an explanation: a text table with each pod's TF_CONFIG, JSON for
tools, or a Mermaid flowchart (pods, Services, claim, volume, TensorBoard) for READMEs and
pull-request comments. A sweep's runs are shown one after the other (JSON: a list)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..repo import runtimes
from ..repo.runtimes.tfconfig import Pod
from ..words import counted
from . import EXPLAIN_FORMATS
from .explain import Explanation


def format_explanations(explanations: Sequence[Explanation], fmt: str) -> str:
    """Every run's explanation in one of EXPLAIN_FORMATS: a spec without sweep is shown as
    before (one object in JSON); a sweep's runs as a JSON list, or one after the other."""
    if not any(e.run for e in explanations) and len(explanations) == 1:
        return format_explanation(explanations[0], fmt)
    if fmt == "json":
        return json.dumps([as_json(e) for e in explanations], indent=2)
    return "\n\n".join(format_explanation(e, fmt) for e in explanations)


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
    """`{"job", "namespace", "cluster", "pods": [...]}`, of a size linear in the pods: the
    cluster spec every pod's TF_CONFIG shares is written once (null when the operator sets no
    TF_CONFIG), and each pod's `task`. A pod's exact TF_CONFIG is the compact JSON of
    `{"cluster": <cluster>, "task": <task>, "environment": "cloud"}`
    (docs/running-experiments.md, "tfgen explain"); a TFJob with enableDynamicWorker, whose
    pods each see another cluster, gives each pod its exact `tfConfig` instead."""
    pods = explanation.pods
    shared = next((p.cluster for p in pods if p.cluster is not None), None)
    dense = shared is not None and not any(p.dynamic_worker for p in pods)
    return {
        "job": explanation.job,
        "runtime": explanation.runtime,
        **({"run": explanation.run} if explanation.run else {}),
        "namespace": explanation.namespace,
        "cluster": {k: list(v) for k, v in sorted(shared.items())} if dense and shared else None,
        "pods": [_pod_json(explanation, p, dense) for p in pods],
    }


def pod_name(explanation: Explanation, pod: Pod) -> str:
    """The pod's name as the cluster gives it (`Pod.name` is its Service's and its host's):
    the same on the training operator, `<run>-<role>-0-<index>-xxxxx` under a JobSet."""
    runtime = runtimes.by_name(explanation.runtime)
    return runtime.pod_name(explanation.job, pod.replica_type.lower(), pod.index)


def _pod_json(explanation: Explanation, pod: Pod, dense: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": pod.name, "pod": pod_name(explanation, pod),
        "replicaType": pod.replica_type, "index": pod.index,
        "address": pod.address, "gpus": pod.gpus,
        "task": {"type": pod.task_type, "index": pod.index} if pod.cluster is not None else None,
    }
    if not dense and pod.cluster is not None:
        out["tfConfig"] = pod.tf_config
    return out


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


def _queue_text(explanation: Explanation) -> list[str]:
    """Who admits the run: a Kueue LocalQueue (a sweep's runs each on their own), or nobody."""
    kueue = explanation.values.get("kueue") or {}
    if not kueue.get("queue"):
        return []
    priority = f", priority {kueue['priority']}" if kueue.get("priority") else ""
    each = (" Each run of the sweep is a workload of its own: Kueue admits them one by one, "
            "as quota allows." if explanation.values.get("runs") else "")
    return [f"Queued by Kueue: LocalQueue {kueue['queue']}{priority}; no pod starts before "
            f"admission.{each}"]


def as_text(explanation: Explanation) -> str:
    pods = explanation.pods
    runtime = runtimes.by_name(explanation.runtime)
    lines = [
        f"{runtime.kind} {explanation.job} in namespace {explanation.namespace} (runtime "
        f"{runtime.name}): {counted(len(pods), 'pod')}, one headless Service each",
        *([f"Run of the sweep: {explanation.run}"] if explanation.run else []),
        *_queue_text(explanation),
        "",
    ]
    rows = [["POD", "SERVICE", "TYPE", "INDEX", "ADDRESS", "GPUS"]]
    rows += [[pod_name(explanation, p), p.name, p.replica_type, str(p.index), p.address,
              str(p.gpus)] for p in pods]
    if all(row[0] == row[1] for row in rows[1:]):  # the Service named as its pod: one column
        rows = [[row[0], *row[2:]] for row in rows]
    lines += _table(rows)
    lines += ["", "Volume: " + _volume_text(explanation), _tensorboard_text(explanation), ""]
    if all(p.tf_config is None for p in pods):
        lines.append(
            "TF_CONFIG: none; the training operator sets it only when the job has more than "
            "one replica in total"
        )
        return "\n".join(lines)
    lines.append(f"TF_CONFIG {runtime.tf_config_by} in each pod (use --format json for the "
                 "exact strings):")
    lines += _tf_configs_text(explanation, pods)
    advice = tensorflow_notes(explanation)
    if advice:
        lines += ["", "Notes for the training program:"]
        lines += [f"- {note}" for note in advice]
    return "\n".join(lines)


def _tf_configs_text(explanation: Explanation, pods: Sequence[Pod]) -> list[str]:
    """Each pod's TF_CONFIG, of a size linear in the pods: the cluster every pod shares is
    printed once, in the first pod's TF_CONFIG, then each pod's task (two thousand pods would
    otherwise print the cluster two thousand times: hundreds of MB). A TFJob with
    enableDynamicWorker gives each pod another cluster: each is printed whole. Pods are named
    as the cluster names them."""
    names = [pod_name(explanation, p) for p in pods]
    first = pods[0]
    shared = first.cluster is not None and all(
        not p.dynamic_worker and (p.cluster is first.cluster or p.cluster == first.cluster)
        for p in pods)
    if not shared:
        out: list[str] = []
        for name, p in zip(names, pods, strict=True):
            out += ["", f"{name}:"]
            out += ["  " + line for line in pretty_tf_config(p.tf_config or "null")]
        return out
    out = ["", f"{names[0]}'s, whose cluster every pod shares:"]
    out += ["  " + line for line in pretty_tf_config(first.tf_config or "null")]
    out += ["", "and each pod's own task:"]
    width = max(map(len, names))
    out += [f"  {name.ljust(width)}  \"task\": "
            f"{json.dumps({'type': p.task_type, 'index': p.index})}"
            for name, p in zip(names, pods, strict=True)]
    return out


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
    if notes and explanation.example:
        notes.append(f"{explanation.example} shows how")
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
    kind = runtimes.by_name(explanation.runtime).kind
    out.append(f"  subgraph tfjob[{_label(f'{kind} {explanation.job} ({explanation.namespace})')}]")
    for i, p in enumerate(explanation.pods):
        gpu = f" · {p.gpus} GPU" if p.gpus else ""
        name = pod_name(explanation, p)
        out.append(f"    pod{i}[{_label(f'{name}<br/>{p.replica_type} {p.index}{gpu}')}]")
    out.append("  end")
    for i, p in enumerate(explanation.pods):
        out.append(f"  svc{i}([{_label(f'svc {p.name}:{p.port}')}]) --> pod{i}")
    return "\n".join(out + _storage_mermaid(explanation) + _tensorboard_mermaid(explanation))


def _storage_mermaid(explanation: Explanation) -> list[str]:
    """The claim every pod mounts, its volume and the NAS behind it."""
    claim = explanation.claim
    if not claim:
        return []
    out = [f"  pvc[({_label(f'PVC {claim}<br/>{explanation.mount_path}')})]"]
    out += [f"  pod{i} --> pvc" for i in range(len(explanation.pods))]
    pv = explanation.find("PersistentVolume")
    if pv is not None:
        out.append(f"  pv[({_label('PV ' + pv['metadata']['name'])})]")
        out.append(f"  nas[({_label(_nas_text(pv))})]")
        out.append("  pvc --> pv --> nas")
    return out


def _tensorboard_mermaid(explanation: Explanation) -> list[str]:
    """TensorBoard reading the claim, with its Service and Ingress."""
    deployment = explanation.find("Deployment", "tensorboard")
    if deployment is None:
        return []
    name = deployment["metadata"]["name"]
    out = [f"  tb[{_label(f'TensorBoard {name}<br/>{explanation.log_dir}')}]"]
    if explanation.claim:
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
    return out
