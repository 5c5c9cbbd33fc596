"""The lab starts, runs a JobSet to Completed on its GPU nodes, and stops."""

from __future__ import annotations

import json
from typing import Any

import pytest
from labwait import wait_for

pytestmark = pytest.mark.lab


def _jobset(name: str) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{
        "name": "trainer", "image": "registry.invalid/trainer:1",  # KWOK pulls nothing
        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    job = {"parallelism": 2, "completions": 2, "template": {"spec": pod}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name},
            "spec": {"replicatedJobs": [{"name": "worker", "replicas": 2,
                                         "template": {"spec": job}}]}}


def _condition(kind: str) -> Any:
    def ok(obj: dict[str, Any]) -> bool:
        return any(c.get("type") == kind and c.get("status") == "True"
                   for c in obj.get("status", {}).get("conditions", []))
    return ok


def test_a_jobset_completes_on_the_gpu_nodes(lab: Any, namespace: str) -> None:
    lab.kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(_jobset("smoke")))
    wait_for(lab, "JobSet smoke Completed", ["-n", namespace, "jobset", "smoke"],
             _condition("Completed"))
    pods = json.loads(lab.kubectl("-n", namespace, "get", "pods", "-o", "json").stdout)
    nodes = {p["spec"].get("nodeName") for p in pods["items"]}
    assert len(pods["items"]) == 4
    assert nodes <= {"lab-gpu-0", "lab-gpu-1"}, nodes
