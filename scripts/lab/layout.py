"""Where the lab keeps things, and the ports it chose.

Built tools live in `.tools/lab/` (bin/ and the manifests rendered from the pinned modules),
all running state in `.lab/` (ignored by git): kubeconfig, certs, logs, PIDs, ports.json, and
etcd's data on tmpfs when the machine has /dev/shm (etcd fsyncs every write; on a disk that
slows every API call).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .procs import free_ports

# Every port the lab listens on, all on 127.0.0.1 (chosen free at each start).
PORT_NAMES = (
    "etcd", "etcd-peer", "apiserver", "kwok", "jobset-webhook", "jobset-probe",
    "kueue-webhook", "kueue-probe", "kueue-metrics", "training-operator-webhook",
    "training-operator-probe", "redis", "argocd-repo-server", "argocd-repo-server-metrics",
    "argocd-controller-metrics", "argocd-appset-probe", "argocd-appset-metrics",
    "argocd-appset-webhook", "git",
)
TOKEN = "tfgen-lab-admin"  # the static token of the lab's only user (system:masters)


@dataclass
class Layout:
    """Paths of one lab, rooted at a checkout of the repository."""

    root: Path
    # "" for the lab of `make lab`; a name (a pytest-xdist worker's) for another one beside it
    instance: str = ""
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
        return self.root / ".lab" / self.instance if self.instance else self.root / ".lab"

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

    def choose_ports(self) -> None:
        """Pick free ports and record them in .lab/ports.json."""
        self.ports = dict(zip(PORT_NAMES, free_ports(len(PORT_NAMES)), strict=True))
        self.state.mkdir(parents=True, exist_ok=True)
        (self.state / "ports.json").write_text(json.dumps(self.ports, indent=1) + "\n")

    def load_ports(self) -> None:
        self.ports = json.loads((self.state / "ports.json").read_text())


def write_kubeconfig(lay: Layout) -> None:
    """The lab's kubeconfig (the admin token, the lab's CA) and the apiserver's token file."""
    ca = lay.certs / "ca.crt"
    lay.kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "tfgen-lab",
        "clusters": [{"name": "tfgen-lab", "cluster": {
            "server": lay.server(), "certificate-authority": str(ca)}}],
        "users": [{"name": "admin", "user": {"token": TOKEN}}],
        "contexts": [{"name": "tfgen-lab", "context": {
            "cluster": "tfgen-lab", "user": "admin", "namespace": "default"}}],
    }, indent=1) + "\n")
