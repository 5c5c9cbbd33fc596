"""The team's answers to `tfgen init` (`InitSettings`), and the first cluster they describe.

A repository `tfgen init` makes names its first cluster in tfgen.yaml's `clusters`: its name,
its Argo CD destination (a URL is a server, anything else a cluster name Argo CD knows), its
Kubernetes version, the runtimes it has, the kubeconfig context that reads it, and its node
types (`--node-type NAME:gpus=N,...`), so that a role no node can hold (`gpus: 9` on 8-GPU
nodes) is refused from the first pull request on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionsError
from ..render.generated import quoted
from ..repo import runtimes
from ..validate.config.clusters import IMPLICIT

# The first cluster's name and destination when the team gives none: Argo CD's own cluster.
DEFAULT_CLUSTER = IMPLICIT
DEFAULT_DESTINATION = "https://kubernetes.default.svc"


class SettingsError(OptionsError):
    """Settings the config schema refuses (exit 2); `settings` names them (InitSettings
    fields), so the command line can name its flags."""

    def __init__(self, message: str, settings: list[str]) -> None:
        super().__init__(message)
        self.settings = settings


@dataclass
class InitSettings:
    """The team's answers; None means the config schema's default (its only home)."""

    repo_url: str | None = None
    namespaces: list[str] = field(default_factory=list)
    nas_server: str | None = None
    kubernetes_version: str | None = None
    argocd_namespace: str | None = None
    argocd_version: str | None = None
    target_revision: str | None = None
    tfgen_source: str | None = None  # where CI installs tfgen from (source.py); no default
    # the namespaces' spec defaults (tfgen.yaml `policy.<namespace>`): the runtime (None: the
    # default runtime), a Kueue LocalQueue and WorkloadPriorityClass (None or "": none)
    runtime: str | None = None
    queue: str | None = None
    priority: str | None = None
    # the first cluster (tfgen.yaml `clusters[0]`): its name, its Argo CD destination (an
    # https:// URL is a server, else Argo CD's name for the cluster), the runtimes it has
    # (none: every runtime), the kubeconfig context that reads it (None: the current one)
    cluster: str | None = None
    destination: str | None = None
    cluster_runtimes: list[str] = field(default_factory=list)
    context: str | None = None
    # the node types pods may land on (`clusters[0].nodeTypes`), each as `--node-type` takes
    # it: NAME:gpus=N,cpu=C,memory=M and any LABEL=VALUE (`node_type`); none: no fit check
    node_types: list[str] = field(default_factory=list)


def first_cluster(settings: InitSettings, kubernetes_version: str) -> dict[str, Any]:
    """tfgen.yaml's `clusters[0]` from the settings (the config schema judges its values)."""
    destination = settings.destination or DEFAULT_DESTINATION
    where = "server" if destination.startswith(("https://", "http://")) else "name"
    out: dict[str, Any] = {
        "name": settings.cluster or DEFAULT_CLUSTER,
        "destination": {where: destination},
        "kubernetesVersion": kubernetes_version,
        "runtimes": list(settings.cluster_runtimes or [r.name for r in runtimes.RUNTIMES]),
    }
    if settings.context:
        out["context"] = settings.context
    out["nodeTypes"] = [node_type(text) for text in settings.node_types]
    return out


# What one node type says of itself in `--node-type NAME:KEY=VALUE,...`; any other key is a
# label of its nodes.
NODE_SIZES = ("gpus", "cpu", "memory")
NODE_TYPE_FORM = "NAME:gpus=N,cpu=C,memory=M,LABEL=VALUE"


def node_type(text: str) -> dict[str, Any]:
    """One `--node-type` as an entry of tfgen.yaml's `clusters[].nodeTypes` (the config schema
    judges its values); a SettingsError when it does not have the form."""
    name, _, rest = text.partition(":")
    entry: dict[str, Any] = {"name": name.strip()}
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SettingsError(f"these settings make an invalid tfgen.yaml:\nnode_types: "
                                f"{quoted(text)}: {quoted(item)} is not KEY=VALUE (the form is "
                                f"{NODE_TYPE_FORM}, e.g. gpu-a100:gpus=8,cpu=96,memory=1Ti,"
                                "accelerator=a100)", ["node_types"])
        key, value = key.strip(), value.strip()
        if key == "gpus":
            entry[key] = int(value) if value.isdigit() else value
        elif key in NODE_SIZES:
            entry[key] = value
        else:
            labels[key] = value
    if labels:
        entry["labels"] = labels
    return entry
