"""The real controllers do what `tfgen explain` says. For each bundled TFJob experiment, its
rendered objects are applied to the lab as Argo CD would apply them, and every pod the training
operator creates carries the TF_CONFIG `tfgen explain` gives it, byte for byte, with the Service
of the same name beside it. For each bundled JobSet experiment, the JobSet and Job controllers
create the pods (Kueue admitting them where the spec names a queue): each pod's TF_CONFIG, its
completion index expanded as the kubelet would, is explain's; each task's headless Service
selects exactly its pod; the pods run on the GPU nodes with the GPUs asked for."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from gitops import kueue_objects
from helpers import REPO_ROOT
from lab.versions import GPU_NODES
from labwait import wait_for
from tfgen.run.explain import Explanation, explain_spec

pytestmark = pytest.mark.lab

TFJOB_SPECS = sorted(p for p in (REPO_ROOT / "experiments").glob("*.yaml")
                     if yaml.safe_load(p.read_text())["spec"].get("runtime", "tfjob") == "tfjob"
                     and "sweep" not in yaml.safe_load(p.read_text())["spec"])


@contextmanager
def _created(lab: Any, namespace: str, objects: list[dict[str, Any]]) -> Iterator[None]:
    """`objects` created in the lab (the namespace made when missing), as Argo CD would apply
    them; deleted again afterwards, their pods with them, before the next test reuses names."""
    lab.kubectl("create", "namespace", namespace, check=False)
    items = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    lab.kubectl("apply", "--server-side", "--field-manager=tfgen", "-n", namespace,
                "-f", "-", input=items)
    try:
        yield
    finally:
        lab.kubectl("delete", "-n", namespace, "--timeout=120s", "--ignore-not-found",
                    "-f", "-", input=items, check=False)


RUNNING = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}  # KWOK keeps the pods running


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a TFJob's replicas or a JobSet's replicated jobs."""
    spec = obj.get("spec", {})
    if obj["kind"] == "TFJob":
        return [replica["template"] for replica in spec.get("tfReplicaSpecs", {}).values()]
    if obj["kind"] == "JobSet":
        return [job["template"]["spec"]["template"] for job in spec.get("replicatedJobs", [])]
    return []


def _held_running(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of `objects` whose pods KWOK keeps running: a pod that completed at once would
    let its job finish, and the controller then deletes the pods and Services still running
    before a test has seen them."""
    held = copy.deepcopy(objects)
    templates = [template for obj in held for template in _pod_templates(obj)]
    assert templates, "no TFJob or JobSet pod template to hold running"
    for template in templates:
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(RUNNING)
    return held


@pytest.fixture
def applied(lab: Any, request: pytest.FixtureRequest) -> Iterator[Explanation]:
    """The experiment's objects created in the lab, its pods held running by KWOK."""
    explanation = explain_spec(request.param)
    with _created(lab, explanation.namespace, _held_running(explanation.objects)):
        yield explanation


def _env(pod: dict[str, Any], name: str) -> str | None:
    for container in pod["spec"]["containers"]:
        for env in container.get("env") or []:
            if env["name"] == name:
                return str(env.get("value"))
    return None


@pytest.mark.parametrize("applied", TFJOB_SPECS, ids=lambda p: Path(p).stem, indirect=True)
def test_the_operators_pods_get_the_tf_config_explain_says(lab: Any,
                                                           applied: Explanation) -> None:
    expected = {p.name: p.tf_config for p in applied.pods}
    assert expected and all(expected.values()), "explain gave no pod or no TF_CONFIG"
    uid = json.loads(lab.kubectl("-n", applied.namespace, "get", "tfjob", applied.job,
                                 "-o", "json").stdout)["metadata"]["uid"]

    def this_jobs(pods: dict[str, Any]) -> list[dict[str, Any]]:
        """The pods of this TFJob (not of an earlier one of the same name still going)."""
        return [p for p in pods["items"]
                if any(o["uid"] == uid for o in p["metadata"].get("ownerReferences", []))]
    found = this_jobs(wait_for(lab, f"the pods of {applied.job}",
                               ["-n", applied.namespace, "pods", "-l",
                                f"training.kubeflow.org/job-name={applied.job}"],
                               lambda pods: len(this_jobs(pods)) == len(expected)))
    assert {p["metadata"]["name"]: _env(p, "TF_CONFIG") for p in found} == expected
    # the operator creates each pod's Service beside it, not before it
    wait_for(lab, f"the Services of {applied.job}",
             ["-n", applied.namespace, "services", "-l",
              f"training.kubeflow.org/job-name={applied.job}"],
             lambda services: {s["metadata"]["name"] for s in services["items"]}
             == set(expected))


JOBSET_SPECS = sorted(p for p in (REPO_ROOT / "experiments").glob("*.yaml")
                      if yaml.safe_load(p.read_text())["spec"].get("runtime") == "jobset")
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"  # the Job controller writes it
INDEX_VARIABLE = "$(JOB_COMPLETION_INDEX)"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
@pytest.fixture
def started_jobset(lab: Any, request: pytest.FixtureRequest) -> Iterator[Explanation]:
    """The experiment's objects created in the lab, its pods held running by KWOK (so their
    Services have endpoints), its queue's Kueue objects in place."""
    explanation = explain_spec(request.param)
    lab.kubectl("create", "namespace", explanation.namespace, check=False)  # for the queue
    lab.kubectl("apply", "--server-side", "--field-manager=platform", "-f", "-",
                input=json.dumps({"apiVersion": "v1", "kind": "List",
                                  "items": kueue_objects([explanation.namespace])}))
    with _created(lab, explanation.namespace, _held_running(explanation.objects)):
        yield explanation


def _expanded(pod: dict[str, Any]) -> str | None:
    """The pod's TF_CONFIG as its container sees it: $(JOB_COMPLETION_INDEX) replaced by the
    index the Job controller gave the pod, as the kubelet expands a variable it defines."""
    value = _env(pod, "TF_CONFIG")
    index = pod["metadata"]["annotations"][INDEX_ANNOTATION]
    return None if value is None else value.replace(INDEX_VARIABLE, index)


@pytest.mark.parametrize("started_jobset", JOBSET_SPECS, ids=lambda p: Path(p).stem,
                         indirect=True)
def test_the_jobset_controllers_pods_get_the_tf_config_explain_says(
        lab: Any, started_jobset: Explanation) -> None:
    explained = {(p.task_type, p.index): p for p in started_jobset.pods}
    assert explained and all(p.tf_config for p in explained.values())
    namespace, job = started_jobset.namespace, started_jobset.job

    def all_running(pods: dict[str, Any]) -> bool:
        return len(pods["items"]) == len(explained) and all(
            p["status"].get("phase") == "Running" for p in pods["items"])
    pods = wait_for(lab, f"the pods of JobSet {job} running",
                    ["-n", namespace, "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={job}"],
                    all_running)["items"]
    by_task = {(p["metadata"]["labels"][REPLICATED_JOB_LABEL],
                int(p["metadata"]["annotations"][INDEX_ANNOTATION])): p for p in pods}
    assert set(by_task) == set(explained)
    for task, pod in by_task.items():
        want = explained[task]
        assert _expanded(pod) == want.tf_config, task
        # on a GPU node, with the GPUs the role asks for
        assert pod["spec"]["nodeName"] in GPU_NODES, task
        limits = pod["spec"]["containers"][0]["resources"].get("limits", {})
        assert int(limits.get("nvidia.com/gpu", 0)) == want.gpus, task
    # each task's headless Service selects exactly the one pod of its task
    for task, pod in by_task.items():
        service = explained[task].name
        slices = wait_for(
            lab, f"the EndpointSlice of Service {service}",
            ["-n", namespace, "endpointslices", "-l", f"kubernetes.io/service-name={service}"],
            lambda found: any(s.get("endpoints") for s in found["items"]))["items"]
        targets = [e["targetRef"]["name"] for s in slices for e in s.get("endpoints") or []]
        assert targets == [pod["metadata"]["name"]], (service, targets)
