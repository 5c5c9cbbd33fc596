"""A tfgen repository that the lab's Argo CD follows, set up as a platform engineer would.

The repository is a copy of this one (chart, schemas, bundled experiments, tfgen.yaml) with
`argocd.repoURL` pointed at the lab's `git daemon` and `argocd.version` at the lab's Argo CD;
the tests add their own experiments to it with tfgen's own commands. A push is a commit in the
working copy and `git push` into the bare repository the daemon serves.

The platform's part (what tfgen leaves to it, argo/README.md): the namespaces, Kueue's
ResourceFlavor, ClusterQueue, LocalQueues and priority class, a volume a spec names as an extra
claim, then the health-check patch for argocd-cm and the bootstrap Application.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO_ROOT, copy_repo_parts, git
from tfgen.repo.naming import APPLICATIONSET_NAME

# The lab runs Argo CD 3.2: the repository says so, and tfgen wires it for that release.
ARGOCD_VERSION = "3.2"
KUEUE = "kueue.x-k8s.io/v1beta2"
CLUSTER_QUEUE = "lab-gpus"
GPU_QUOTA = 3  # mnist-jobset asks 2, the queued TFJob 3: one waits for the other
FLAVOUR_NODE_LABELS = {"nvidia.com/gpu.present": "true"}  # the lab's GPU nodes carry it
# A claim the bundled cpu-linear mounts beside its own volume (spec.storage.extraClaims)
SHARED_CLAIM = ("default", "shared-datasets")

Doc = dict[str, Any]


def kueue_objects(namespaces: list[str]) -> list[Doc]:
    """One flavour (the GPU nodes), one ClusterQueue holding GPU_QUOTA GPUs, a LocalQueue
    `gpu-team` per namespace, the priority class `research` the bundled spec names."""
    quota = [{"name": "cpu", "nominalQuota": "256"}, {"name": "memory", "nominalQuota": "2Ti"},
             {"name": "nvidia.com/gpu", "nominalQuota": str(GPU_QUOTA)}]
    return [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "lab-gpu"},
         "spec": {"nodeLabels": FLAVOUR_NODE_LABELS}},
        {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": [q["name"] for q in quota],
             "flavors": [{"name": "lab-gpu", "resources": quota}]}]}},
        *({"apiVersion": KUEUE, "kind": "LocalQueue",
           "metadata": {"name": "gpu-team", "namespace": ns},
           "spec": {"clusterQueue": CLUSTER_QUEUE}} for ns in namespaces),
        {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "research"},
         "value": 100},
    ]


def shared_claim() -> list[Doc]:
    """The platform's shared dataset volume and its claim, bound to each other."""
    namespace, name = SHARED_CLAIM
    return [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"lab-{name}"},
         "spec": {"capacity": {"storage": "1Ti"}, "accessModes": ["ReadOnlyMany"],
                  "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                  "nfs": {"server": "127.0.0.1", "path": f"/{name}"},
                  "claimRef": {"namespace": namespace, "name": name}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": name, "namespace": namespace},
         "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": "",
                  "volumeName": f"lab-{name}", "resources": {"requests": {"storage": "1Ti"}}}},
    ]


@dataclass
class GitOpsRepo:
    """The working copy, the lab that follows it, and how to change it."""

    lab: Any
    root: Path
    bare: Path

    def tfgen(self, *args: str, expect: int = 0) -> str:
        """Run tfgen in the repository as its user would; its output (stdout and stderr)."""
        done = subprocess.run([sys.executable, "-m", "tfgen", *args], cwd=self.root,
                              capture_output=True, text=True, check=False)
        output = done.stdout + done.stderr
        assert done.returncode == expect, f"tfgen {' '.join(args)}: rc {done.returncode}\n{output}"
        return output

    def commit(self, message: str) -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        return git(self.root, "rev-parse", "HEAD").strip()

    def push(self) -> str:
        """Push main to the served repository; the revision Argo CD will sync."""
        git(self.root, "push", "-q", str(self.bare), "main")
        return git(self.root, "rev-parse", "HEAD").strip()

    def spec(self, name: str) -> Path:
        return self.root / "experiments" / f"{name}.yaml"

    def edit(self, name: str, change: Callable[[Doc], None]) -> None:
        """Change a spec as data (its comments are not the point of these tests)."""
        doc = yaml.safe_load(self.spec(name).read_text())
        change(doc)
        self.spec(name).write_text(yaml.safe_dump(doc, sort_keys=False))

    def application(self, name: str) -> Doc:
        done = self.lab.kubectl("-n", "argocd", "get", "application", name, "-o", "json",
                                check=False)
        return json.loads(done.stdout) if done.returncode == 0 else {}

    def refresh_applicationset(self) -> None:
        """What the Git webhook does on a push: the ApplicationSet reads Git again now (its
        git generator otherwise polls every three minutes)."""
        self.lab.kubectl("-n", "argocd", "annotate", "applicationset", "--all", "--overwrite",
                         "argocd.argoproj.io/application-set-refresh=true")


def make_repo(lab: Any, dest: Path, add: Callable[[GitOpsRepo], None]) -> GitOpsRepo:
    """The copy, pointed at the lab, with the tests' experiments added by `add`, rendered,
    checked by the gate and committed; pushed into a bare repository the lab serves."""
    name = f"gitops-{uuid.uuid4().hex[:8]}"
    root = copy_repo_parts(dest / "work")
    config = root / "tfgen.yaml"
    text = config.read_text()
    for old, new in (('version: "3.3"', f'version: "{ARGOCD_VERSION}"'),
                     ("https://github.com/example-org/ml-experiments.git", lab.git_url(name))):
        assert old in text, old
        text = text.replace(old, new, 1)
    config.write_text(text)
    bare = lab.git_root / name
    repo = GitOpsRepo(lab=lab, root=root, bare=bare)
    git(root, "init", "-q", "-b", "main")
    add(repo)
    repo.tfgen("render")
    repo.tfgen("check")
    repo.commit("experiments for the lab")
    git(root, "init", "-q", "--bare", str(bare))
    repo.push()
    return repo


def namespaces(repo: GitOpsRepo) -> list[str]:
    """The experiment namespaces of the repository's tfgen.yaml."""
    return list(yaml.safe_load((repo.root / "tfgen.yaml").read_text())["argocd"]["namespaces"])


def platform_set_up(lab: Any, repo: GitOpsRepo) -> None:
    """What argo/README.md asks of a platform engineer, then the bootstrap Application."""
    for ns in namespaces(repo):
        lab.kubectl("create", "namespace", ns, check=False)  # there already: fine
    listing = {"apiVersion": "v1", "kind": "List",
               "items": [*kueue_objects(namespaces(repo)), *shared_claim()]}
    lab.kubectl("apply", "--server-side", "--field-manager=platform", "-f", "-",
                input=json.dumps(listing))
    lab.kubectl("-n", "argocd", "patch", "configmap", "argocd-cm", "--type", "merge",
                "--patch-file", str(repo.root / "argo" / "argocd-cm-health.yaml"))
    lab.kubectl("apply", "-f", str(repo.root / "argo" / "bootstrap.yaml"))
    # The bootstrap Application syncs the ApplicationSet in; once it is there, read Git now,
    # as a Git webhook has it do: its generator otherwise polls every three minutes, and a
    # lab that synced another module's repository before may be in the middle of one.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and lab.kubectl(
            "-n", "argocd", "get", "applicationset", APPLICATIONSET_NAME,
            check=False).returncode != 0:
        time.sleep(1)
    repo.refresh_applicationset()


def tear_down(lab: Any, repo: GitOpsRepo, clusters: tuple[Any, ...] = (),
              kinds: str = "tfjobs,jobsets,deployments") -> None:
    """After a module's repository: the lab lives on for the session's other tests, which use
    the same namespaces and names. Stop syncing (the Applications go, what they made stays, as
    tfgen wires them), then delete what they made, in the lab and in `clusters` beside it
    (`kinds`: the workloads those clusters serve), before the next test reuses a name."""
    made = "app.kubernetes.io/part-of=tfgen"
    lab.kubectl("-n", "argocd", "delete", "applications,applicationsets", "--all",
                "--timeout=120s", check=False)
    # The AppProject carries Argo CD's resources finalizer (argo/project.yaml), which the
    # application controller lifts once its cache holds no Application of the project. The
    # lab's controller has been seen keeping a deleted Application there for the rest of the
    # session (each update of it answered "not found": the informer missed the delete, as in
    # argoproj/argo-cd#20403), and an unbounded delete then waits forever: after a bounded
    # wait the finalizer is lifted here, since the next test reuses the name.
    if lab.kubectl("-n", "argocd", "delete", "appprojects", "-l", made, "--timeout=30s",
                   check=False).returncode != 0:
        for project in lab.kubectl("-n", "argocd", "get", "appprojects", "-l", made, "-o",
                                   "name", check=False).stdout.split():
            lab.kubectl("-n", "argocd", "patch", project, "--type=merge",
                        "-p", '{"metadata":{"finalizers":null}}', check=False)
    for cluster in (lab, *clusters):
        for namespace in namespaces(repo):
            for what in (kinds, "pods,services,networkpolicies,pvc"):
                cluster.kubectl("-n", namespace, "delete", "--timeout=120s", "-l", made, what,
                                check=False)
        cluster.kubectl("delete", "pv", "--timeout=120s", "-l", made, check=False)


def experiment_names(repo: GitOpsRepo) -> list[str]:
    """Every Application the ApplicationSet should make: one per generated app.yaml."""
    return sorted(p.parent.name for p in (repo.root / "argo" / "experiments").glob("*/app.yaml"))


class Watch:
    """Applications sampled over time: every (sync status, operation phase) each was seen in,
    so a test can say an Application never went OutOfSync once synced, nor failed a sync."""

    def __init__(self, repo: GitOpsRepo) -> None:
        self.repo = repo
        self.seen: dict[str, list[tuple[str, str, str]]] = {}

    def sample(self) -> dict[str, Doc]:
        done = self.repo.lab.kubectl("-n", "argocd", "get", "applications", "-o", "json")
        apps = {a["metadata"]["name"]: a for a in json.loads(done.stdout)["items"]}
        for name, app in apps.items():
            status = app.get("status", {})
            seen = (status.get("sync", {}).get("status", ""),
                    status.get("operationState", {}).get("phase", ""),
                    status.get("operationState", {}).get("message", ""))
            if not self.seen.get(name) or self.seen[name][-1] != seen:
                self.seen.setdefault(name, []).append(seen)
        return apps

    def until(self, what: str, ok: Callable[[dict[str, Doc]], bool],
              timeout: float = 180) -> dict[str, Doc]:
        """Sample until `ok` holds; fail after `timeout` (a hang guard, not a speed claim)."""
        deadline = time.monotonic() + timeout
        apps: dict[str, Doc] = {}
        while time.monotonic() < deadline:
            apps = self.sample()
            if ok(apps):
                return apps
            time.sleep(1)
        summary = {n: (a.get("status", {}).get("sync", {}).get("status"),
                       a.get("status", {}).get("health", {}).get("status"),
                       a.get("status", {}).get("operationState", {}).get("message", "")[:300])
                   for n, a in apps.items()}
        pytest.fail(f"{what}: not within {timeout:.0f} s; Applications:\n"
                    f"{json.dumps(summary, indent=1)}")

    def observe(self, seconds: float) -> dict[str, Doc]:
        """Sample for `seconds`, whatever happens."""
        deadline = time.monotonic() + seconds
        apps = self.sample()
        while time.monotonic() < deadline:
            time.sleep(1)
            apps = self.sample()
        return apps

    def failed_syncs(self, name: str) -> list[str]:
        return [message for _, phase, message in self.seen.get(name, [])
                if phase in ("Failed", "Error")]

    def out_of_sync_after_synced(self, name: str) -> bool:
        statuses = [sync for sync, _, _ in self.seen.get(name, [])]
        first = statuses.index("Synced") if "Synced" in statuses else len(statuses)
        return "OutOfSync" in statuses[first:]


def sync_of(app: Doc) -> tuple[str, str]:
    status = app.get("status", {})
    return status.get("sync", {}).get("status", ""), status.get("health", {}).get("status", "")


__all__ = ["REPO_ROOT", "GitOpsRepo", "Watch", "experiment_names", "kueue_objects",
           "make_repo", "namespaces", "platform_set_up", "sync_of", "tear_down"]
