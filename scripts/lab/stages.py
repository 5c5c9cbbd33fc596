"""KWOK's Stage objects for the lab, from KWOK's own module (`kustomize/stage/`).

KWOK does what a kubelet would only as its stages say. The lab takes KWOK's own:
- `kustomize/stage/fast`, rendered with `kubectl kustomize` as KWOK's docs do: nodes Ready at
  once with lease heartbeats, pods ready, complete, delete; with one change: the stock
  pod-complete stage
  completes only pods owned by a Job, and a TFJob's pods are owned by the TFJob, so its
  owner-kind selector is widened to TFJob too (the training operator then sees its chief
  finish); and it takes the `delay` of KWOK's own `pod/general` pod-complete stage with its
  defaults at zero, so pods still complete at once unless annotated
  `pod-complete.stage.kwok.x-k8s.io/delay: "30s"` (a job that must hold its quota while
  another waits, for the Kueue tests);
- `pod/chaos/pod-container-running-failed`, unchanged: a Running pod labelled
  `pod-container-running-failed.stage.kwok.x-k8s.io: "true"` fails, with the exit code in the
  annotation `pod-container-running-failed.stage.kwok.x-k8s.io/exit-code` (default 1); the
  tests use it for Degraded. Its weight wins over pod-complete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import manifests
from .host import LabError, say

FAST = "kustomize/stage/fast"
GENERAL_COMPLETE = "kustomize/stage/pod/general/pod-complete.yaml"
CHAOS = ("kustomize/stage/pod/chaos/pod-container-running-failed.yaml",)
OWNER_KEY = ".metadata.ownerReferences.[].kind"
COMPLETED_OWNERS = ("Job", "TFJob")


def widen_pod_complete(stage: dict[str, Any]) -> None:
    """Let pod-complete complete the pods of a TFJob as well as a Job's."""
    for expression in stage["spec"]["selector"]["matchExpressions"]:
        if expression["key"] == OWNER_KEY:
            expression["values"] = sorted(set(expression["values"]) | set(COMPLETED_OWNERS))
            return
    raise LabError(f"KWOK's pod-complete stage has no {OWNER_KEY} selector any more: "
                   "look at stages.py again")


def annotated_delay(module: Path) -> dict[str, Any]:
    """The general pod-complete stage's delay (its duration read from the annotation), with
    its default at zero and without its jitter: KWOK takes a jitter no longer than the
    duration as the whole delay, so a zero default jitter would cancel the annotation."""
    [general] = [d for d in manifests.parse((module / GENERAL_COMPLETE).read_text())
                 if d.get("kind") == "Stage"]
    delay: dict[str, Any] = general["spec"]["delay"]
    delay["durationMilliseconds"] = 0
    delay.pop("jitterDurationMilliseconds", None)
    delay.pop("jitterDurationFrom", None)
    return delay


def render(kubectl: Path, module: Path, out: Path) -> None:
    """Write the lab's stages, read from KWOK's module, to `out`."""
    docs = manifests.kustomize(kubectl, module / FAST)
    for name in CHAOS:
        if not (module / name).exists():
            raise LabError(f"KWOK's module has no {name}")
        docs += manifests.parse((module / name).read_text())
    docs = [d for d in docs if d.get("kind") == "Stage"]
    for doc in docs:
        if doc["metadata"]["name"] == "pod-complete":
            widen_pod_complete(doc)
            doc["spec"]["delay"] = annotated_delay(module)
    out.parent.mkdir(parents=True, exist_ok=True)
    # a YAML stream of JSON documents: what KWOK's --config reads, with no YAML writer needed
    out.write_text("\n---\n".join(json.dumps(d) for d in docs) + "\n")
    say(f"kwok: {len(docs)} stages from {module.name}/{FAST} and chaos -> {out.name}")
