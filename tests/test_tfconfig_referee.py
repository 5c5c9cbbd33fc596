"""TF_CONFIG as the training operator computes it: repo/runtimes/tfconfig.py against its code.

tests/go/tfconfig calls the training operator's own functions (v1.9, as its go.mod pins
github.com/kubeflow/training-operator): the defaulting webhook's SetDefaults_TFJob, then
TFJobReconciler.SetClusterSpec for every pod (genClusterSpec, genTFConfigJSONStr) and
common.GenGeneralName for its name. Every TFJob tfgen renders here (each chart ci scenario,
each bundled experiment) and property-generated replica layouts (chief or master or neither,
0 to N workers, parameter servers, an evaluator; any namespace and name length; replica type
names in any case; ports; the dynamic-worker form; a cluster domain) must give the same pods,
names and TF_CONFIG byte for byte.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from helpers import examples, go_tool, rendered_here
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfgen.repo.runtimes import tfconfig

pytestmark = pytest.mark.go  # runs a Go tool of `make go-tools`


Job = tuple[dict[str, Any], str]  # (TFJob, cluster domain)
PodOutcome = tuple[str, int, str, str | None]  # replica type, index, pod name, TF_CONFIG


def referee(jobs: list[Job]) -> list[list[PodOutcome]]:
    lines = "".join(json.dumps({"tfjob": job, "clusterDomain": domain}) + "\n"
                    for job, domain in jobs)
    result = subprocess.run([str(go_tool("tfconfig"))], input=lines, capture_output=True,
                            text=True, check=True)
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(jobs) and not [a["error"] for a in answers if "error" in a]
    return [sorted((p["type"], p["index"], p["name"], p["tfConfig"]) for p in a["pods"])
            for a in answers]


def tfgen(jobs: list[Job]) -> list[list[PodOutcome]]:
    return [sorted((p.replica_type, p.index, p.name, p.tf_config)
                   for p in tfconfig.pods(job, domain)) for job, domain in jobs]


def assert_same(jobs: list[Job]) -> None:
    theirs, ours = referee(jobs), tfgen(jobs)
    differ = [(job, their, our) for job, their, our in zip(jobs, theirs, ours, strict=True)
              if their != our]
    assert not differ, f"{len(differ)} of {len(jobs)} TFJobs computed otherwise; first: " \
                       f"{differ[0]}"


RENDERED_JOBS = [o.doc for o in rendered_here() if o.kind == "TFJob"]


def test_every_rendered_tfjob_is_computed_alike() -> None:
    assert len(RENDERED_JOBS) >= 8
    assert_same([(job, domain) for job in RENDERED_JOBS for domain in ("", "cluster.local")])


# --- property-generated layouts --------------------------------------------------------------

DNS_LABEL = st.from_regex(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)


def _spelling(rtype: str) -> st.SearchStrategy[str]:
    """The operator's defaulting accepts a replica type in any case."""
    return st.sampled_from([rtype, rtype.lower(), rtype.upper()])


@st.composite
def replicas(draw: st.DrawFn, most: int) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "tensorflow", "image": "tf"}
    port = draw(st.none() | st.integers(1, 65535))
    if port is not None:
        container["ports"] = [{"name": draw(st.sampled_from(["tfjob-port", "other"])),
                               "containerPort": port}]
    others = draw(st.lists(st.just({"name": "sidecar", "image": "s"}), max_size=1))
    spec: dict[str, Any] = {"template": {"spec": {"containers": [*others, container]}}}
    count = draw(st.none() | st.integers(0, most))
    if count is not None:
        spec["replicas"] = count
    return spec


@st.composite
def tfjobs(draw: st.DrawFn) -> Job:
    specs: dict[str, Any] = {}
    leader = draw(st.sampled_from([None, "Chief", "Master"]))
    if leader:
        specs[draw(_spelling(leader))] = draw(replicas(most=1))
    for rtype, most in (("Worker", 6), ("PS", 3), ("Evaluator", 1)):
        if draw(st.booleans()):
            specs[draw(_spelling(rtype))] = draw(replicas(most=most))
    if not specs:
        specs["Worker"] = draw(replicas(most=6))
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": draw(DNS_LABEL), "namespace": draw(DNS_LABEL)},
           "spec": {"tfReplicaSpecs": specs}}
    if draw(st.booleans()):
        job["spec"]["enableDynamicWorker"] = draw(st.booleans())
    return job, draw(st.sampled_from(["", "cluster.local", "example.internal"]))


@settings(max_examples=examples(30), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(tfjobs(), min_size=30, max_size=30))
def test_generated_layouts_are_computed_alike(jobs: list[Job]) -> None:
    """A batch per operator process."""
    assert_same(jobs)
