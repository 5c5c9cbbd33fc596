"""The chart's NetworkPolicies, checked against the labels the training operator puts on pods.

Two experiments in one namespace are rendered by the real helm; every pod the operator would
create is given the labels it sets (`repo/runtimes/tfjob.py`, read from training-operator v1.9)
on top of the template's, and the policies' selectors are evaluated as Kubernetes evaluates them.
A pod of one job must be an allowed peer of its own job and of no other; TensorBoard must not
reach the training pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import template
from tfgen.gate.helm.command import find_helm
from tfgen.repo.runtimes import tfjob

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "tfjob-experiment"
WALKTHROUGH = CHART / "ci" / "walkthrough-values.yaml"
INGRESS = CHART / "ci" / "tensorboard-ingress-values.yaml"
KUBE_VERSION = "1.30.0"
NAMESPACE = "default"


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes LabelSelector against a label set (an empty selector selects all)."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def render(tmp_path: Path, name: str, *extra: dict[str, Any], base: Path = WALKTHROUGH
           ) -> list[dict[str, Any]]:
    files = [base]
    for index, values in enumerate(({"experiment": {"name": name, "namespace": NAMESPACE}},
                                    *extra)):
        path = tmp_path / f"{name}-{index}.yaml"
        path.write_text(yaml.safe_dump(values))
        files.append(path)
    text = template(CHART, name, NAMESPACE, files, kube_version=KUBE_VERSION, helm=find_helm(4))
    return [doc for doc in yaml.safe_load_all(text) if doc]


def pods(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """pod name -> labels, for every pod the TFJob's operator and the Deployment would create."""
    out: dict[str, dict[str, str]] = {}
    for obj in objects:
        if obj["kind"] == "TFJob":
            job = obj["metadata"]["name"]
            replicas = obj["spec"]["tfReplicaSpecs"]
            for rtype, spec in replicas.items():
                for index in range(spec.get("replicas", 1)):
                    labels = dict(spec["template"]["metadata"].get("labels") or {})
                    labels.update(tfjob.operator_pod_labels(job, replicas, rtype, index))
                    out[f"{job}-{rtype.lower()}-{index}"] = labels
        elif obj["kind"] == "Deployment":
            out[obj["metadata"]["name"]] = dict(obj["spec"]["template"]["metadata"]["labels"])
    return out


def policies(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}


def peers_allowed(policy: dict[str, Any], labels: dict[str, str], namespace: str) -> bool:
    """Would `policy` admit a connection from a pod with `labels` in `namespace`?"""
    for rule in policy["spec"].get("ingress") or []:
        for peer in rule.get("from") or []:
            ns_selector = peer.get("namespaceSelector")
            if ns_selector is None:
                ns_ok = namespace == policy["metadata"]["namespace"]
            else:
                ns_ok = selects(ns_selector, {"kubernetes.io/metadata.name": namespace})
            pod_ok = selects(peer.get("podSelector") or {}, labels)
            if ns_ok and pod_ok:
                return True
    return False


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("np")
    return render(tmp, "job-a") + render(tmp, "job-b")


def test_policies_select_on_the_operator_labels(two_jobs: list[dict[str, Any]]) -> None:
    """The chart's selector and repo/runtimes/tfjob.py name the same labels: one fact, held in
    step."""
    policy = policies(two_jobs)["job-a"]
    assert policy["spec"]["podSelector"] == {"matchLabels": {
        tfjob.OPERATOR_NAME_LABEL: tfjob.OPERATOR_NAME, tfjob.JOB_NAME_LABEL: "job-a"}}
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress stays open (NAS, registries)


def test_each_job_admits_its_own_pods_and_no_other(two_jobs: list[dict[str, Any]]) -> None:
    all_pods = pods(two_jobs)
    found = policies(two_jobs)
    jobs = {"job-a", "job-b"}
    training = {name: labels for name, labels in all_pods.items()
                if labels.get(tfjob.JOB_NAME_LABEL) in jobs}
    assert len(training) == 2 * 5  # master, 2 workers, 2 PS per job
    for job in jobs:
        policy = found[job]
        for pod, labels in all_pods.items():
            own = labels.get(tfjob.JOB_NAME_LABEL) == job
            # the policy guards exactly the job's own pods ...
            assert selects(policy["spec"]["podSelector"], labels) is own, (job, pod)
            # ... and admits exactly them: not the other job, not any TensorBoard
            assert peers_allowed(policy, labels, NAMESPACE) is own, (job, pod)
            # nor the same labels from another namespace
            assert not peers_allowed(policy, labels, "intruders")


def test_tensorboard_is_open_to_its_namespace_only(two_jobs: list[dict[str, Any]]) -> None:
    policy = policies(two_jobs)["job-a-tensorboard"]
    board = pods(two_jobs)["job-a-tensorboard"]
    assert selects(policy["spec"]["podSelector"], board)
    assert not selects(policy["spec"]["podSelector"], pods(two_jobs)["job-b-tensorboard"])
    assert peers_allowed(policy, {"any": "pod"}, NAMESPACE)
    assert not peers_allowed(policy, {"any": "pod"}, "ingress-nginx")  # no Ingress here
    assert [p["port"] for r in policy["spec"]["ingress"] for p in r["ports"]] == [6006]


def test_an_ingress_lets_the_controller_namespace_in(tmp_path: Path) -> None:
    objects = render(tmp_path, "web", {"networkPolicy": {"enabled": True,
                                                         "ingressNamespace": "traefik"}},
                     base=INGRESS)
    policy = policies(objects)["web-tensorboard"]
    assert peers_allowed(policy, {}, "traefik")
    assert not peers_allowed(policy, {}, "ingress-nginx")
    assert not peers_allowed(policy, {}, "other-team")


def test_the_repository_can_turn_them_off(tmp_path: Path) -> None:
    objects = render(tmp_path, "bare", {"networkPolicy": {"enabled": False,
                                                          "ingressNamespace": "x"}})
    assert not policies(objects)
    assert {o["kind"] for o in objects} >= {"TFJob", "Deployment"}


def test_operator_labels_match_the_operator() -> None:
    """training-operator v1.9: job-role=master on the Chief/Master, else on worker 0."""
    with_chief = tfjob.operator_pod_labels("j", ["Chief", "Worker"], "Chief", 0)
    assert with_chief == {tfjob.OPERATOR_NAME_LABEL: "tfjob-controller",
                          tfjob.JOB_NAME_LABEL: "j", tfjob.REPLICA_TYPE_LABEL: "chief",
                          tfjob.REPLICA_INDEX_LABEL: "0", tfjob.JOB_ROLE_LABEL: "master"}
    assert tfjob.JOB_ROLE_LABEL not in tfjob.operator_pod_labels(
        "j", ["Chief", "Worker"], "Worker", 0)
    assert tfjob.operator_pod_labels("j", ["Worker", "PS"], "Worker", 0)[
        tfjob.JOB_ROLE_LABEL] == "master"
    assert tfjob.JOB_ROLE_LABEL not in tfjob.operator_pod_labels("j", ["Worker"], "Worker", 1)
