"""Argo CD in the lab: Redis, the repo server, the application controller, the ApplicationSet
controller (one binary, its role from ARGOCD_BINARY_NAME), and `git daemon` as the Git server.

`ARGOCD_FAKE_IN_CLUSTER=true` makes the in-cluster destination (https://kubernetes.default.svc)
use $KUBECONFIG, so Applications written for a real cluster sync into the lab unchanged.
argocd-server (UI and API) is not run: the tests read Applications with kubectl.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .layout import Layout

NAMESPACE = "argocd"
# How Argo CD names the cluster it runs in (here: the lab's first, through $KUBECONFIG)
IN_CLUSTER_NAME = "in-cluster"
IN_CLUSTER_SERVER = "https://kubernetes.default.svc"
# Settings objects Argo CD reads at start; upstream ships them empty but for this label (the
# settings manager watches only objects carrying it). The tests add health checks to argocd-cm.
SETTINGS = ("argocd-cm", "argocd-rbac-cm", "argocd-cmd-params-cm", "argocd-gpg-keys-cm",
            "argocd-ssh-known-hosts-cm", "argocd-tls-certs-cm")


def settings_objects() -> list[dict[str, object]]:
    """The ConfigMaps and the Secret Argo CD's components need to exist."""
    labels = {"app.kubernetes.io/part-of": "argocd"}
    maps: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels}}
        for name in SETTINGS]
    return [*maps, {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": "argocd-secret", "namespace": NAMESPACE,
                                 "labels": labels}}]


def default_project() -> dict[str, object]:
    """The `default` AppProject, as argocd-server creates it at its start (the lab does not
    run argocd-server, and Applications of project `default` are refused without it)."""
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
            "metadata": {"name": "default", "namespace": NAMESPACE},
            "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                     "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}}


def env(lay: Layout, role: str) -> dict[str, str]:
    """The environment of one Argo CD role: the kubeconfig, a private temp folder, helm on
    PATH for the repo server, GPG off (it would want a keyring under /app)."""
    tmp = lay.state / "tmp" / role
    tmp.mkdir(parents=True, exist_ok=True)
    helm = lay.root / ".tools" / "helm" / "v3"
    path = os.pathsep.join(p for p in (str(helm), os.environ.get("PATH", "")) if p)
    return {**os.environ, "ARGOCD_BINARY_NAME": role, "ARGOCD_FAKE_IN_CLUSTER": "true",
            "KUBECONFIG": str(lay.kubeconfig), "ARGOCD_GPG_ENABLED": "false",
            "TMPDIR": str(tmp), "HOME": str(tmp), "PATH": path}


def redis(lay: Layout) -> list[str]:
    data = lay.state / "redis"
    data.mkdir(parents=True, exist_ok=True)
    return ["redis-server", "--bind", "127.0.0.1", "--port", str(lay.ports["redis"]),
            "--save", "", "--appendonly", "no", "--dir", str(data), "--daemonize", "no"]


def repo_server(lay: Layout) -> list[str]:
    """It keeps what a branch resolves to for as long as the controller's resync (3 min
    upstream); 5 s here, so that a push is seen at the controller's next 10 s resync."""
    return [str(lay.bin / "argocd"), "--address=127.0.0.1", "--revision-cache-expiration=5s",
            f"--port={lay.ports['argocd-repo-server']}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={lay.ports['argocd-repo-server-metrics']}", "--disable-tls",
            f"--redis=127.0.0.1:{lay.ports['redis']}", "--loglevel=info"]


def application_controller(lay: Layout) -> list[str]:
    """Its metrics server takes a port but no address: it listens on every interface. A short
    resync (10 s, upstream 3 min) so that tests see a push without waiting minutes. Each
    resource's health, message included, is kept in its Application (upstream keeps it only in
    Redis since 3.0), where the tests read it with kubectl."""
    return [str(lay.bin / "argocd"), f"--namespace={NAMESPACE}",
            f"--kubeconfig={lay.kubeconfig}",
            f"--repo-server=127.0.0.1:{lay.ports['argocd-repo-server']}",
            "--repo-server-plaintext", f"--redis=127.0.0.1:{lay.ports['redis']}",
            f"--metrics-port={lay.ports['argocd-controller-metrics']}",
            "--app-resync=10", "--persist-resource-health", "--loglevel=info"]


def applicationset_controller(lay: Layout) -> list[str]:
    return [str(lay.bin / "argocd"), f"--namespace={NAMESPACE}",
            f"--kubeconfig={lay.kubeconfig}",
            f"--argocd-repo-server=127.0.0.1:{lay.ports['argocd-repo-server']}",
            "--repo-server-plaintext",
            f"--metrics-addr=127.0.0.1:{lay.ports['argocd-appset-metrics']}",
            f"--probe-addr=127.0.0.1:{lay.ports['argocd-appset-probe']}",
            f"--webhook-addr=127.0.0.1:{lay.ports['argocd-appset-webhook']}",
            "--enable-leader-election=false", "--loglevel=info"]


def git_daemon(lay: Layout) -> list[str]:
    """`git daemon` serving every repository under .lab/git/ read-only, on loopback."""
    lay.git_root.mkdir(parents=True, exist_ok=True)
    git = shutil.which("git") or "git"
    return [git, "daemon", "--listen=127.0.0.1", f"--port={lay.ports['git']}",
            f"--base-path={lay.git_root}", "--export-all", "--reuseaddr", "--informative-errors",
            str(Path(lay.git_root))]
