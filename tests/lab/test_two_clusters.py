"""The lab's two clusters, with plain objects (no tfgen): what tfgen's `clusters:` rests on.

- lab-b is a cluster of its own: its GPU nodes are Ready with their GPUs, and it serves no
  JobSet (a JobSet sent there is refused) while lab-a does;
- lab-a's Argo CD manages lab-b: an Application whose destination names lab-b syncs a
  ConfigMap from Git into lab-b and not into lab-a, and one naming an unregistered cluster
  does not sync;
- lab-b's Kueue admits a queued TFJob within its ClusterQueue's quota, and one needing more
  GPUs than its ClusterQueue's nominal quota when the queue's cohort has room to lend
  (borrowing), where a ClusterQueue with the same quota in no cohort keeps it waiting.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import git
from lab import Cluster, Lab
from lab.clusters import SECOND
from labwait import wait_for

pytestmark = pytest.mark.lab

Doc = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"  # as tests/lab/gitops.py
GPU = "nvidia.com/gpu"
JOBSETS = "jobsets.jobset.x-k8s.io"


def _condition(kind: str, status: str = "True") -> Callable[[Doc], bool]:
    def ok(obj: Doc) -> bool:
        return any(c.get("type") == kind and c.get("status") == status
                   for c in obj.get("status", {}).get("conditions", []))
    return ok


def _apply(cluster: Cluster, docs: list[Doc], namespace: str | None = None) -> str:
    where = ["-n", namespace] if namespace else []
    return cluster.kubectl(*where, "apply", "--server-side", "--field-manager=lab-test",
                           "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": docs})).stdout


# --- (a) lab-b is a cluster of its own, without JobSet ---------------------------------------


def test_the_second_clusters_gpu_nodes_are_ready(two_clusters: tuple[Lab, Cluster]) -> None:
    a, b = two_clusters
    nodes = json.loads(b.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert {n["metadata"]["name"]: int(n["status"]["allocatable"][GPU]) for n in nodes} \
        == SECOND.nodes
    for node in nodes:
        assert _condition("Ready")(node), node["metadata"]["name"]
        assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == SECOND.gpu_product
    # told apart from lab-a's by name and GPU product
    a_nodes = json.loads(a.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert not {n["metadata"]["name"] for n in a_nodes} & set(SECOND.nodes)
    assert {n["metadata"]["labels"]["nvidia.com/gpu.product"] for n in a_nodes} \
        == {a.plan.gpu_product} != {SECOND.gpu_product}


def test_only_the_first_cluster_serves_jobsets(two_clusters: tuple[Lab, Cluster],
                                               b_namespace: str) -> None:
    a, b = two_clusters

    def served(cluster: Cluster) -> list[str]:
        return cluster.kubectl("api-resources", "--api-group=jobset.x-k8s.io",
                               "-o", "name").stdout.split()
    assert served(a) == [JOBSETS]
    assert served(b) == []
    assert "NotFound" in b.kubectl("get", "crd", JOBSETS, check=False).stderr
    # what a JobSet sent to lab-b meets (Argo CD's sync would meet it too)
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "refused"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {
                  "spec": {"restartPolicy": "Never", "containers": [
                      {"name": "c", "image": "registry.invalid/c:1"}]}}}}}]}}
    done = b.kubectl("-n", b_namespace, "create", "--dry-run=server", "-f", "-",
                     input=json.dumps(jobset), check=False)
    assert done.returncode != 0
    assert 'no matches for kind "JobSet" in version "jobset.x-k8s.io/v1alpha2"' in done.stderr


# --- (b) lab-a's Argo CD delivers to lab-b -------------------------------------------------


def _served_repo(lab: Lab, work: Path, files: dict[str, Doc]) -> str:
    """A Git repository of `files` (path -> object), pushed where the lab's git daemon
    serves it; its URL."""
    name = f"two-clusters-{uuid.uuid4().hex[:8]}"
    for path, doc in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(json.dumps(doc, indent=1) + "\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "objects for lab-b")
    git(work, "init", "-q", "--bare", str(lab.git_root / name))
    git(work, "push", "-q", str(lab.git_root / name), "main")
    return lab.git_url(name)


def _application(name: str, repo: str, destination: dict[str, str]) -> Doc:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": "argocd"},
            "spec": {"project": "default",
                     "source": {"repoURL": repo, "targetRevision": "main", "path": "app"},
                     "destination": destination,
                     "syncPolicy": {"automated": {"prune": True}}}}


@pytest.fixture
def applications(two_clusters: tuple[Lab, Cluster]) -> Iterator[list[str]]:
    """The names of the Applications a test makes in lab-a: deleted afterwards."""
    a, _ = two_clusters
    names: list[str] = []
    yield names
    if names:
        a.kubectl("-n", "argocd", "delete", "application", *names, "--ignore-not-found",
                  "--timeout=60s", check=False)


def test_argo_cd_syncs_an_application_into_the_second_cluster_only(
        two_clusters: tuple[Lab, Cluster], b_namespace: str, tmp_path: Path,
        applications: list[str]) -> None:
    a, b = two_clusters
    # registered as Argo CD documents: a labelled Secret naming lab-b's server
    [secret] = json.loads(a.kubectl(
        "-n", "argocd", "get", "secrets", "-l", "argocd.argoproj.io/secret-type=cluster",
        "-o", "json").stdout)["items"]
    assert _decoded(secret, "name") == b.argocd_name == "lab-b"
    assert _decoded(secret, "server") == b.argocd_server == b.server
    marker = uuid.uuid4().hex
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "where"},
                 "data": {"marker": marker}}
    repo = _served_repo(a, tmp_path / "repo", {"app/configmap.json": configmap})
    app = f"to-b-{marker[:8]}"
    nowhere = f"to-nowhere-{marker[:8]}"
    applications += [app, nowhere]
    _apply(a, [_application(app, repo, {"name": b.argocd_name, "namespace": b_namespace}),
               _application(nowhere, repo, {"name": "lab-z", "namespace": b_namespace})])

    synced = wait_for(a, f"Application {app} Synced and Healthy",
                      ["-n", "argocd", "application", app],
                      lambda got: (got.get("status", {}).get("sync", {}).get("status"),
                                   got.get("status", {}).get("health", {}).get("status"))
                      == ("Synced", "Healthy"))
    assert synced["status"]["sync"]["comparedTo"]["destination"]["name"] == "lab-b"
    got = json.loads(b.kubectl("-n", b_namespace, "get", "configmap", "where",
                               "-o", "json").stdout)
    assert got["data"] == {"marker": marker}
    # and nowhere in lab-a
    assert marker not in a.kubectl("get", "configmaps", "--all-namespaces", "-o", "json").stdout
    # a destination Argo CD has no cluster Secret for is refused, as tfgen must foresee
    refused = wait_for(a, f"Application {nowhere} refused",
                       ["-n", "argocd", "application", nowhere],
                       _has_condition("InvalidSpecError"))
    [message] = [c["message"] for c in refused["status"]["conditions"]
                 if c["type"] == "InvalidSpecError"]
    assert message == "there are no clusters with this name: lab-z", message


def _has_condition(kind: str) -> Callable[[Doc], bool]:
    """Argo CD's Application conditions carry no status: present or not."""
    def ok(obj: Doc) -> bool:
        return any(c.get("type") == kind for c in obj.get("status", {}).get("conditions", []))
    return ok


def _decoded(secret: Doc, key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


# --- (c) lab-b's Kueue: quota, and borrowing within a cohort ---------------------------------

FLAVOR = "lab-b-gpu"
COHORT = "lab-b-pool"
NOMINAL = 2  # GPUs each ClusterQueue holds; lab-b's node has 4
# ClusterQueue -> its cohort ("" for none)
CLUSTER_QUEUES = {"team-a": COHORT, "team-b": COHORT, "alone": ""}


def _kueue_objects(namespace: str) -> list[Doc]:
    """One flavour (lab-b's GPU product), three ClusterQueues of NOMINAL GPUs (two sharing a
    cohort), a LocalQueue named after each in `namespace`."""
    quota = [{"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "512Gi"},
             {"name": GPU, "nominalQuota": str(NOMINAL)}]
    queues: list[Doc] = []
    for name, cohort in CLUSTER_QUEUES.items():
        spec: Doc = {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": [q["name"] for q in quota],
            "flavors": [{"name": FLAVOR, "resources": quota}]}]}
        if cohort:
            spec["cohortName"] = cohort
        queues.append({"apiVersion": KUEUE, "kind": "ClusterQueue",
                       "metadata": {"name": name}, "spec": spec})
    return [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
         "spec": {"nodeLabels": {"nvidia.com/gpu.product": SECOND.gpu_product}}},
        *queues,
        *({"apiVersion": KUEUE, "kind": "LocalQueue",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"clusterQueue": name}} for name in CLUSTER_QUEUES),
    ]


@pytest.fixture
def queues(two_clusters: tuple[Lab, Cluster], b_namespace: str) -> Iterator[str]:
    """lab-b's Kueue objects for the test; its namespace. Deleted afterwards (the jobs
    first, so that the ClusterQueues are free to go)."""
    _, b = two_clusters
    objects = _kueue_objects(b_namespace)
    _apply(b, objects)
    try:
        yield b_namespace
    finally:
        b.kubectl("-n", b_namespace, "delete", "tfjobs", "--all", "--timeout=60s",
                  check=False)
        b.kubectl("delete", "--ignore-not-found", "--timeout=60s", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
                  check=False)


def _tfjob(name: str, queue: str, workers: int, hold: str = "") -> Doc:
    """A TFJob of `workers` workers of one GPU each, queued in `queue`; KWOK keeps its pods
    running for `hold` (e.g. "60s"), none by default."""
    annotations = {"pod-complete.stage.kwok.x-k8s.io/delay": hold} if hold else {}
    pod = {"metadata": {"annotations": annotations},
           "spec": {"containers": [{
               "name": "tensorflow", "image": "registry.invalid/trainer:1",  # KWOK pulls nothing
               "resources": {"requests": {"cpu": "1", "memory": "1Gi", GPU: "1"},
                             "limits": {GPU: "1"}}}]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers,
                                                   "restartPolicy": "Never",
                                                   "template": pod}}}}


def _workload(b: Cluster, namespace: str, job: str) -> list[str]:
    """`kubectl get` arguments for the Kueue Workload of TFJob `job`."""
    return ["-n", namespace, "workloads.kueue.x-k8s.io", "-l",
            f"kueue.x-k8s.io/job-uid={_uid(b, namespace, job)}"]


def _uid(b: Cluster, namespace: str, job: str) -> str:
    return json.loads(b.kubectl("-n", namespace, "get", "tfjob", job, "-o", "json")
                      .stdout)["metadata"]["uid"]


def _one(ok: Callable[[Doc], bool]) -> Callable[[Doc], bool]:
    """A list check: exactly one item, and `ok` accepts it."""
    return lambda found: len(found["items"]) == 1 and ok(found["items"][0])


def test_kueue_admits_a_tfjob_within_its_cluster_queues_quota(
        two_clusters: tuple[Lab, Cluster], queues: str) -> None:
    _, b = two_clusters
    _apply(b, [_tfjob("within", "team-b", workers=NOMINAL)], queues)
    wait_for(b, "the Workload of TFJob within admitted", _workload(b, queues, "within"),
             _one(_condition("Admitted")))
    done = wait_for(b, "TFJob within Succeeded", ["-n", queues, "tfjob", "within"],
                    _condition("Succeeded"))
    assert done["spec"]["runPolicy"]["suspend"] is False  # Kueue let it go
    pods = json.loads(b.kubectl("-n", queues, "get", "pods", "-o", "json").stdout)["items"]
    assert len(pods) == NOMINAL
    assert {p["spec"]["nodeName"] for p in pods} <= set(SECOND.nodes)
    # the flavour's node label, injected by Kueue at admission
    assert all(p["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == SECOND.gpu_product
               for p in pods)


def _gpu_reservation(total: int, borrowed: int) -> Callable[[Doc], bool]:
    """A ClusterQueue check: Kueue reports `total` GPUs reserved, `borrowed` of them from
    its cohort."""
    def ok(queue: Doc) -> bool:
        for flavor in queue.get("status", {}).get("flavorsReservation") or []:
            for resource in flavor["resources"]:
                if resource["name"] == GPU:
                    return (str(resource.get("total", "0")), str(resource.get("borrowed", "0"))) \
                        == (str(total), str(borrowed))
        return total == borrowed == 0
    return ok


def test_kueue_lends_a_cohorts_unused_quota(two_clusters: tuple[Lab, Cluster],
                                            queues: str) -> None:
    """NOMINAL + 1 GPUs: admitted from team-a (its cohort has team-b's unused quota), kept
    waiting in `alone` (the same nominal quota, no cohort)."""
    _, b = two_clusters
    wanted = NOMINAL + 1
    _apply(b, [_tfjob("borrows", "team-a", workers=wanted, hold="60s"),
               _tfjob("cannot", "alone", workers=wanted)], queues)
    wait_for(b, "the Workload of TFJob borrows admitted", _workload(b, queues, "borrows"),
             _one(_condition("Admitted")))
    wait_for(b, "ClusterQueue team-a reporting the GPU it borrowed",
             ["clusterqueue", "team-a"], _gpu_reservation(wanted, borrowed=1))
    waiting = wait_for(b, "the Workload of TFJob cannot kept waiting with Kueue's reason",
                       _workload(b, queues, "cannot"),
                       _one(lambda w: _condition("QuotaReserved", "False")(w) and any(
                           c.get("message") for c in w["status"]["conditions"])))
    [reserved] = [c for c in waiting["items"][0]["status"]["conditions"]
                  if c["type"] == "QuotaReserved"]
    assert GPU in reserved["message"], reserved
    alone = json.loads(b.kubectl("get", "clusterqueue", "alone", "-o", "json").stdout)
    assert _gpu_reservation(0, borrowed=0)(alone), alone.get("status")
    # the borrowing job's pods run on lab-b's GPU node
    wait_for(b, "TFJob borrows Running", ["-n", queues, "tfjob", "borrows"],
             _condition("Running"))
