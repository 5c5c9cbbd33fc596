"""Where the lab keeps things, and the ports it chose.

Built tools live in `.tools/lab/` (bin/ and the manifests rendered from the pinned modules),
all running state in `.lab/` (ignored by git): kubeconfig, certs, logs, PIDs, ports.json, and
etcd's data on tmpfs when the machine has /dev/shm (etcd fsyncs every write; on a disk that
slows every API call). A second cluster keeps its own (kubeconfig, logs, PIDs, ports.json)
in a folder of the lab's, `.lab/b/`; `.lab/clusters.kubeconfig` has a context per cluster.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .procs import free_ports

# Every port the lab listens on, all on 127.0.0.1 (chosen free at each start): each control
# plane's, and those of Argo CD and the git daemon, which only the first cluster runs.
CLUSTER_PORTS = (
    "etcd", "etcd-peer", "apiserver", "kwok", "jobset-webhook", "jobset-probe",
    "kueue-webhook", "kueue-probe", "kueue-metrics", "training-operator-webhook",
    "training-operator-probe",
)
ARGOCD_PORTS = (
    "redis", "argocd-repo-server", "argocd-repo-server-metrics", "argocd-controller-metrics",
    "argocd-appset-probe", "argocd-appset-metrics", "argocd-appset-webhook", "git",
)
PORT_NAMES = CLUSTER_PORTS + ARGOCD_PORTS
TOKEN = "tfgen-lab-admin"  # the static token of the lab's only user (system:masters)


@dataclass
class Layout:
    """Paths of one lab, rooted at a checkout of the repository."""

    root: Path
    # "" for the lab of `make lab`; a name (a pytest-xdist worker's) for another one beside it
    instance: str = ""
    # "" for the lab's first cluster; a folder name for a cluster started beside it, whose
    # state is a folder of the first's (.lab/<instance>/<cluster>/)
    cluster: str = ""
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def tools(self) -> Path:
        return self.root / ".tools" / "lab"

    @property
    def bin(self) -> Path:
        return self.tools / "bin"

    @property
    def manifests(self) -> Path:
        return self.tools / "manifests"

    @property
    def state(self) -> Path:
        lab = self.root / ".lab" / self.instance if self.instance else self.root / ".lab"
        return lab / self.cluster if self.cluster else lab

    @property
    def certs(self) -> Path:
        # one CA for every lab of the checkout: the training operator's certificate folder
        # is one fixed path on the machine, so labs side by side must present the same files
        return self.root / ".lab" / "certs"

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    @property
    def etcd_data(self) -> Path:
        # one folder per checkout, so two labs on one machine keep apart
        tag = hashlib.sha256(str(self.state).encode()).hexdigest()[:12]
        shm = Path("/dev/shm")
        return shm / f"tfgen-lab-{tag}" if shm.is_dir() else self.state / "etcd"

    @property
    def git_root(self) -> Path:
        """The folder `git daemon` serves: a repository put at git_root/<name> is
        git://127.0.0.1:<port>/<name>."""
        return self.state / "git"

    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def choose_ports(self, names: tuple[str, ...] = PORT_NAMES) -> None:
        """Pick free ports for `names` and record them in <state>/ports.json."""
        self.ports = dict(zip(names, free_ports(len(names)), strict=True))
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "ports.json").write_text(json.dumps(self.ports, indent=1) + "\n")

    def load_ports(self) -> None:
        self.ports = json.loads((self.state / "ports.json").read_text())


def write_kubeconfig(path: Path, servers: dict[str, str], certs: Path) -> None:
    """A kubeconfig with a context per cluster (context name -> API server URL), each as the
    lab's admin (its static token) trusting the lab's CA; the first context is the current."""
    ca = certs / "ca.crt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": next(iter(servers)),
        "clusters": [{"name": name, "cluster": {"server": server,
                                                "certificate-authority": str(ca)}}
                     for name, server in servers.items()],
        "users": [{"name": "admin", "user": {"token": TOKEN}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin",
                                                "namespace": "default"}}
                     for name in servers],
    }, indent=1) + "\n")
