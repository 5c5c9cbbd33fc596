"""One repository, two clusters: each run goes where its spec or namespace says, and what a
cluster can never run is refused before the merge.

lab-a (JobSet, 2 A100 nodes of 8 GPUs, the ClusterQueue of gitops.py) runs namespaces
`default` and `ml-team`; lab-b (no JobSet, one H100 node of 4 GPUs) runs `team-b`, whose
LocalQueue `gpu-b` points at a ClusterQueue of 2 GPUs in a cohort with another of 2 that lends.
tfgen.yaml says all this (`clusters:`); the lab's one Argo CD manages both, as lab-b's
registered name. The tests run in file order.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from gitops import GitOpsRepo, make_repo, platform_set_up, tear_down
from lab import Cluster, Lab
from labwait import wait_for

pytestmark = pytest.mark.lab

Doc = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"
DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"
TEAM_B, LOCAL_QUEUE, COHORT = "team-b", "gpu-b", "shared"
OWN_QUEUE, LENDER = "team-b-gpus", "lender"  # 2 GPUs each, one cohort
ON_B, BY_NAME, BORROWS = "runs-on-b", "sent-to-b", "borrows"
IMAGE = "registry.example.com/ml/train:1"
RESOURCES = {"cpu": "64", "memory": "512Gi"}


def _clusters(a: Lab, b: Cluster) -> list[Doc]:
    """tfgen.yaml's `clusters`, as the platform team describes the two lab clusters."""
    def node_type(name: str, gpus: int, product: str) -> Doc:
        return {"name": name, "gpus": gpus, "cpu": "32", "memory": "256Gi",
                "labels": {"nvidia.com/gpu.product": product}}

    def flavor(name: str, gpus: int, product: str, borrow: int | None = None) -> Doc:
        gpu: Doc = {"nominalQuota": gpus}
        if borrow is not None:
            gpu["borrowingLimit"] = borrow
        return {"name": name, "nodeLabels": {"nvidia.com/gpu.product": product},
                "resources": {"nvidia.com/gpu": gpu, **{
                    r: {"nominalQuota": q} for r, q in RESOURCES.items()}}}
    return [
        {"name": "lab-a", "destination": {"server": "https://kubernetes.default.svc"},
         "kubernetesVersion": "1.33", "runtimes": ["tfjob", "jobset"], "context": "lab-a",
         "namespaces": ["default", "ml-team"],
         "nodeTypes": [node_type("a100", 8, a.plan.gpu_product)],
         "queues": {"clusterQueues": [{"name": "lab-gpus", "flavors": [
             {"name": "lab-gpu", "nodeLabels": {"nvidia.com/gpu.present": "true"},
              "resources": {"nvidia.com/gpu": {"nominalQuota": 3}, **{
                  r: {"nominalQuota": q} for r, q in RESOURCES.items()}}}]}],
                    "localQueues": [{"name": "gpu-team", "clusterQueue": "lab-gpus"}]}},
        {"name": b.argocd_name, "destination": {"name": b.argocd_name},
         "kubernetesVersion": "1.33", "runtimes": ["tfjob"], "context": b.name,
         "namespaces": [TEAM_B],
         "nodeTypes": [node_type("h100", 4, b.plan.gpu_product)],
         "queues": {"clusterQueues": [
             {"name": OWN_QUEUE, "cohort": COHORT,
              "flavors": [flavor("b-gpu", 2, b.plan.gpu_product, borrow=2)]},
             {"name": LENDER, "cohort": COHORT,
              "flavors": [flavor("b-gpu", 2, b.plan.gpu_product)]}],
             "localQueues": [{"name": LOCAL_QUEUE, "namespace": TEAM_B,
                              "clusterQueue": OWN_QUEUE}]}},
    ]


def _lab_b_queues(b: Cluster) -> list[Doc]:
    """The Kueue objects tfgen.yaml describes for lab-b, as its platform engineer makes them."""
    def queue(name: str, borrow: int | None) -> Doc:
        gpu: Doc = {"name": "nvidia.com/gpu", "nominalQuota": "2"}
        if borrow is not None:
            gpu["borrowingLimit"] = str(borrow)
        resources = [gpu, *({"name": r, "nominalQuota": q} for r, q in RESOURCES.items())]
        return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name},
                "spec": {"cohortName": COHORT, "namespaceSelector": {}, "resourceGroups": [{
                    "coveredResources": [r["name"] for r in resources],
                    "flavors": [{"name": "b-gpu", "resources": resources}]}]}}
    return [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "b-gpu"},
         "spec": {"nodeLabels": {"nvidia.com/gpu.product": b.plan.gpu_product}}},
        queue(OWN_QUEUE, borrow=2), queue(LENDER, borrow=None),
        {"apiVersion": KUEUE, "kind": "LocalQueue",
         "metadata": {"name": LOCAL_QUEUE, "namespace": TEAM_B},
         "spec": {"clusterQueue": OWN_QUEUE}},
    ]


def _runs(a: Lab, b: Cluster) -> Any:
    def add(repo: GitOpsRepo) -> None:
        path = repo.root / "tfgen.yaml"
        config = yaml.safe_load(path.read_text())
        for key in ("kubernetesVersion", "cluster"):
            config.pop(key, None)
        config["argocd"].pop("destinationServer", None)
        config["argocd"]["namespaces"].append(TEAM_B)
        config["clusters"] = _clusters(a, b)
        config["policy"][TEAM_B] = {"queues": [LOCAL_QUEUE]}
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        common = ("--image", IMAGE, "--ps", "0", "--chief-gpus", "0",
              "--command", "python /app/train.py")
        # home on lab-b by its namespace, unqueued
        repo.tfgen("new", ON_B, "--namespace", TEAM_B, "--workers", "1", "--gpus", "1",
                   *common)
        # a namespace of lab-a, sent to lab-b by its spec
        repo.tfgen("new", BY_NAME, "--namespace", "default", "--cluster", b.argocd_name,
                   "--workers", "1", *common)
        # 4 GPUs through a ClusterQueue of 2: only with what the cohort lends
        repo.tfgen("new", BORROWS, "--namespace", TEAM_B, "--workers", "2", "--gpus", "2",
                   "--queue", LOCAL_QUEUE, *common)
        doc = yaml.safe_load(repo.spec(BORROWS).read_text())
        doc["metadata"].setdefault("annotations", {})[DELAY] = "1h"
        repo.spec(BORROWS).write_text(yaml.safe_dump(doc, sort_keys=False))
        # the bundled experiments are other tests' (one selects a node label lab-a lacks)
        for spec in (repo.root / "experiments").glob("*.yaml"):
            if spec.stem not in (ON_B, BY_NAME, BORROWS):
                spec.unlink()
                shutil.rmtree(repo.root / "argo" / "experiments" / spec.stem)
    return add


@pytest.fixture(scope="module")
def repo(two_clusters: tuple[Lab, Cluster], tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[GitOpsRepo]:
    a, b = two_clusters
    made = make_repo(a, tmp_path_factory.mktemp("clusters"), _runs(a, b))
    b.kubectl("create", "namespace", TEAM_B)
    b.kubectl("apply", "--server-side", "--field-manager=platform", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List",
                                "items": _lab_b_queues(b)}))
    b.kubectl("create", "namespace", "default", check=False)  # there already: fine
    platform_set_up(a, made)
    try:
        yield made
    finally:
        tear_down(a, made, clusters=(b,), kinds="tfjobs,deployments")  # lab-b has no JobSet
        b.kubectl("delete", "-f", "-", "--wait=false", check=False,
                  input=json.dumps({"apiVersion": "v1", "kind": "List",
                                    "items": _lab_b_queues(b)}))


def _tfjob(cluster: Cluster, namespace: str, name: str) -> Doc | None:
    done = cluster.kubectl("-n", namespace, "get", "tfjob", name, "-o", "json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None


def _succeeded(obj: Doc) -> bool:
    return any(c.get("type") == "Succeeded" and c.get("status") == "True"
               for c in obj.get("status", {}).get("conditions", []))


def test_each_run_lands_on_the_cluster_its_namespace_or_spec_names(
        two_clusters: tuple[Lab, Cluster], repo: GitOpsRepo) -> None:
    a, b = two_clusters
    apps = {n: yaml.safe_load((repo.root / "argo" / "experiments" / n / "app.yaml").read_text())
            for n in (ON_B, BY_NAME)}
    assert all(app["destination"] == {"server": "", "name": b.argocd_name}
               for app in apps.values()), apps
    for namespace, name in ((TEAM_B, ON_B), ("default", BY_NAME)):
        wait_for(b, f"{name} succeeded on {b.name}",
                 ["-n", namespace, "tfjob", name], _succeeded)
        assert _tfjob(a, namespace, name) is None, f"{name} is on {a.name} too"
    project = json.loads(a.kubectl("-n", "argocd", "get", "appproject", "tfgen-experiments",
                                   "-o", "json").stdout)
    names = {d.get("name") for d in project["spec"]["destinations"]}
    assert b.argocd_name in names


def test_a_run_that_fits_only_by_borrowing_is_admitted_when_the_cohort_has_room(
        two_clusters: tuple[Lab, Cluster], repo: GitOpsRepo) -> None:
    """The gate warns (more than the ClusterQueue's nominal quota); lab-b's Kueue admits it
    with 2 GPUs borrowed from the lender, the cohort being idle."""
    _, b = two_clusters
    warned = repo.tfgen("validate", f"experiments/{BORROWS}.yaml")
    assert "warning" in warned and "lends" in warned, warned
    wait_for(b, f"{BORROWS} admitted", ["-n", TEAM_B, "tfjob", BORROWS],
             lambda job: job["spec"]["runPolicy"].get("suspend") is False)
    queue = wait_for(b, f"{OWN_QUEUE} lends", ["clusterqueue", OWN_QUEUE],
                     lambda q: q.get("status", {}).get("admittedWorkloads") == 1)
    usage = {r["name"]: r for f in queue["status"]["flavorsReservation"] for r in f["resources"]}
    assert usage["nvidia.com/gpu"]["total"] == "4" and usage["nvidia.com/gpu"]["borrowed"] == "2"


def test_status_reads_each_run_on_its_cluster(two_clusters: tuple[Lab, Cluster],
                                              repo: GitOpsRepo) -> None:
    a, _ = two_clusters
    done = subprocess.run([sys.executable, "-m", "tfgen", "status", "--format", "json",
                           "--kubeconfig", str(a.clusters_kubeconfig)], cwd=repo.root,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    shown = {e["name"]: e for e in json.loads(done.stdout)["experiments"]}
    assert shown[ON_B]["cluster"] == "lab-b" and shown[BY_NAME]["cluster"] == "lab-b"
    assert shown[ON_B]["runs"][0]["phase"] == "succeeded", shown[ON_B]
    assert shown[BORROWS]["runs"][0]["phase"] == "running", shown[BORROWS]
    assert shown[BORROWS]["runs"][0]["gpus"] == 4


def _refusal(repo: GitOpsRepo, name: str, change: dict[str, Any]) -> str:
    """A spec of team-b with `change` made, validated, then taken away again; the output."""
    spec = repo.spec(name)
    doc = yaml.safe_load(repo.spec(ON_B).read_text())
    doc["metadata"]["name"] = name
    doc["spec"].update(change)
    doc["spec"].setdefault("tensorboard", {})["logDir"] = f"/training/{name}/logs"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        return repo.tfgen("validate", f"experiments/{name}.yaml", expect=1)
    finally:
        spec.unlink()


def test_a_jobset_for_the_cluster_without_jobset_is_refused_before_the_merge(
        two_clusters: tuple[Lab, Cluster], repo: GitOpsRepo) -> None:
    _, b = two_clusters
    output = _refusal(repo, "jobset-on-b", {"runtime": "jobset"})
    assert f'runtime "jobset": cluster {b.argocd_name}' in output, output


def test_a_run_over_its_queues_quota_is_refused_before_the_merge(repo: GitOpsRepo) -> None:
    doc = yaml.safe_load(repo.spec(BORROWS).read_text())
    roles = doc["spec"]["roles"]
    roles["worker"]["replicas"] = 3  # 6 GPUs: more than 2 nominal + 2 borrowed
    output = _refusal(repo, "over-quota", {"queue": LOCAL_QUEUE, "roles": roles})
    assert f"ClusterQueue {OWN_QUEUE}" in output and "can never give them more than 4" \
        in output, output


def test_no_kubeconfig_context_of_a_cluster_is_one_line(two_clusters: tuple[Lab, Cluster],
                                                       repo: GitOpsRepo, tmp_path: Path
                                                       ) -> None:
    """A kubeconfig without lab-b's context (tfgen.yaml names it): one line, exit 2."""
    a, _ = two_clusters
    done = subprocess.run([sys.executable, "-m", "tfgen", "status", ON_B, "--kubeconfig",
                           str(a.kubeconfig)], cwd=repo.root, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2, done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and "'lab-b'" in done.stderr, done.stderr
