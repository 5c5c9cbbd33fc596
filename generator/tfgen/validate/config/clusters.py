"""Where experiments run: tfgen.yaml's `clusters`, and the one cluster each spec runs on.

A repository names its clusters, each with what tfgen needs to judge a spec for it (its Argo CD
destination, Kubernetes version, runtimes, node types and Kueue queues). A namespace runs on the
cluster that lists it (else the first), and a spec may name another (`spec.cluster`):
`cluster_for` is the one home of that choice, which validate, render, `list`, `diff` and the
read side ask. Without `clusters` a repository has one implicit cluster, described by the
top-level `kubernetesVersion`, `cluster.nodeTypes` and `argocd.destinationServer`; with them,
those three keys are refused (`cluster_rules`): two answers to one question would disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...repo import resources, runtimes
from ..schema.messages import shown
from ..yaml.document import PointerParts

# The name of the one cluster of a repository without `clusters` (Argo CD's own word for the
# cluster it runs in).
IMPLICIT = "in-cluster"
# The keys that describe the implicit cluster, refused beside `clusters`.
SINGLE_CLUSTER_KEYS: tuple[tuple[PointerParts, str, str], ...] = (
    (("kubernetesVersion",), "kubernetesVersion", "kubernetesVersion"),
    (("cluster",), "cluster.nodeTypes", "nodeTypes"),
    (("argocd", "destinationServer"), "argocd.destinationServer", "destination"),
)

Locate = Callable[[PointerParts], str]  # a pointer into tfgen.yaml -> `tfgen.yaml:<line>`


@dataclass(frozen=True)
class Cluster:
    """One cluster experiments run on, every default filled in.

    `server` or `destination_name` is its Argo CD destination (the other is ""); `context` the
    kubeconfig context the read side uses (None: the current one); `queues` its Kueue queues
    (None: not described, so not checked); `index` its place in tfgen.yaml's `clusters` (None
    for the implicit cluster); `source` where tfgen.yaml says it, as messages name it."""

    name: str
    server: str
    destination_name: str
    kubernetes_version: str
    runtimes: tuple[str, ...]
    context: str | None
    namespaces: tuple[str, ...]
    node_types: list[dict[str, Any]] = field(hash=False, compare=False)
    queues: dict[str, Any] | None = field(hash=False, compare=False)
    index: int | None
    source: str
    node_types_source: str

    @property
    def declared(self) -> bool:
        """Whether tfgen.yaml names this cluster (else it is the implicit one)."""
        return self.index is not None

    @property
    def destination(self) -> dict[str, str]:
        """What the generated app.yaml carries for the ApplicationSet: both keys, one empty
        (`missingkey=error` needs every key; Argo CD reads "" as unset)."""
        return {"server": self.server, "name": self.destination_name}

    @property
    def shown_destination(self) -> str:
        return (f"server {self.server}" if self.server
                else f"Argo CD cluster {self.destination_name}")

    def pointer(self, *parts: str | int) -> PointerParts:
        """A pointer into tfgen.yaml under this cluster's entry."""
        return ("clusters", self.index, *parts) if self.index is not None else tuple(parts)


def clusters_of(data: Mapping[str, Any], locate: Locate) -> list[Cluster]:
    """The clusters of a complete (schema-valid, defaults applied) tfgen.yaml: those it
    declares, else the one implicit cluster."""
    declared = data.get("clusters")
    if not declared:
        argocd = data["argocd"]
        return [Cluster(IMPLICIT, str(argocd["destinationServer"]), "",
                        str(data["kubernetesVersion"]),
                        tuple(runtime.name for runtime in runtimes.RUNTIMES), None,
                        tuple(argocd["namespaces"]),
                        list((data.get("cluster") or {}).get("nodeTypes") or []), None, None,
                        locate(("argocd", "destinationServer")),
                        f"cluster.nodeTypes ({locate(('cluster', 'nodeTypes'))})")]
    out = []
    for index, entry in enumerate(declared):
        destination = entry["destination"]
        out.append(Cluster(
            str(entry["name"]), str(destination.get("server", "")),
            str(destination.get("name", "")), str(entry["kubernetesVersion"]),
            tuple(entry["runtimes"]), entry.get("context"), tuple(entry["namespaces"]),
            list(entry["nodeTypes"]), entry.get("queues"), index,
            locate(("clusters", index)),
            f"clusters[{index}].nodeTypes ({locate(('clusters', index, 'nodeTypes'))})"))
    return out


def home_cluster(clusters: Sequence[Cluster], namespace: object) -> Cluster:
    """The cluster a namespace's specs run on unless they name another: the one that lists it,
    else the first."""
    return next((c for c in clusters if namespace in c.namespaces), clusters[0])


def cluster_for(clusters: Sequence[Cluster], namespace: object, spec: object) -> Cluster | None:
    """The cluster a spec runs on: the one its `spec.cluster` names, else its namespace's.
    None when `spec.cluster` names no cluster of tfgen.yaml (`unknown_cluster` says why)."""
    named = spec.get("cluster") if isinstance(spec, Mapping) else None
    if named is None:
        return home_cluster(clusters, namespace)
    return next((c for c in clusters if c.declared and c.name == named), None)


def unknown_cluster(clusters: Sequence[Cluster], named: object) -> tuple[str, str]:
    """(message, hint) for a `spec.cluster` that names no cluster of tfgen.yaml."""
    declared = [c.name for c in clusters if c.declared]
    if not declared:
        return (f"cluster {shown(str(named))}: tfgen.yaml declares no clusters (every "
                "experiment runs on the one Argo CD destination argocd.destinationServer)",
                "remove spec.cluster, or declare the clusters in tfgen.yaml's clusters")
    return (f"cluster {shown(str(named))} is not one of tfgen.yaml's clusters",
            "one of: " + ", ".join(declared))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def cluster_rules(raw: Mapping[str, Any], data: Mapping[str, Any]
                  ) -> Iterator[tuple[PointerParts, str, str]]:
    """(pointer, message, hint) of every problem of tfgen.yaml's clusters; `raw` as written,
    `data` with the schema's defaults."""
    declared = _list(data.get("clusters"))
    if not declared:
        return
    for parts, key, said in SINGLE_CLUSTER_KEYS:
        if _has(raw, parts):
            yield (parts, f"{key} describes the one cluster of a repository without "
                   f"clusters; this one declares clusters, and each says its own {said}",
                   f"remove it; set clusters[].{said} of each cluster instead")
    yield from _names(declared, data)
    for index, entry in enumerate(declared):
        yield from _queues(index, _mapping(entry.get("queues")), data)


def _has(data: Any, parts: PointerParts) -> bool:
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _names(declared: list[Any], data: Mapping[str, Any]
           ) -> Iterator[tuple[PointerParts, str, str]]:
    """Unique names and destinations, known Kubernetes versions, each namespace homed once."""
    allowed = _list(_mapping(data.get("argocd")).get("namespaces"))
    known = resources.kubernetes_versions()
    seen: dict[Any, int] = {}
    homes: dict[str, str] = {}
    for index, entry in enumerate(declared):
        name = entry.get("name")
        if name in seen:
            yield ((("clusters", index, "name")), f"cluster {shown(str(name))} is declared twice "
                   f"(clusters[{seen[name]}] too)", "give each cluster a name of its own")
        seen.setdefault(name, index)
        destination = tuple(sorted(_mapping(entry.get("destination")).items()))
        if len(destination) != 1:
            yield (("clusters", index, "destination"), f"cluster {shown(str(name))}'s "
                   "destination gives " + ("both a server and a name" if destination else
                                           "neither a server nor a name") +
                   ": Argo CD takes exactly one", "server: <API server URL>, or name: <the "
                   "cluster's name in Argo CD>")
        if destination in seen:
            yield (("clusters", index, "destination"), f"cluster {shown(str(name))} has the "
                   f"destination of clusters[{seen[destination]}]: two names for one cluster "
                   "would let a run move without tfgen seeing it", "one entry per cluster")
        seen.setdefault(destination, index)
        version = entry.get("kubernetesVersion")
        if isinstance(version, str) and known and version not in known:
            yield (("clusters", index, "kubernetesVersion"), f"Kubernetes {shown(version)} is "
                   f"not a version tfgen knows: its schemas (kubernetes-validate) cover "
                   f"{known[0]} to {known[-1]}", "pick one of those")
        for at, namespace in enumerate(_list(entry.get("namespaces"))):
            parts = ("clusters", index, "namespaces", at)
            if namespace not in allowed:
                yield (parts, f"namespace {shown(str(namespace))} is not one of "
                       "argocd.namespaces, where experiments may run",
                       "add it to argocd.namespaces, or remove it here")
            elif namespace in homes:
                yield (parts, f"namespace {shown(str(namespace))} already runs on cluster "
                       f"{shown(homes[namespace])} by default: a namespace has one home "
                       "cluster (a spec may name another with spec.cluster)",
                       "list it under one cluster only")
            homes.setdefault(namespace, str(name))


def _queues(index: int, queues: dict[str, Any], data: Mapping[str, Any]
            ) -> Iterator[tuple[PointerParts, str, str]]:
    """ClusterQueues named once; every LocalQueue pointing at one, once per namespace."""
    allowed = _list(_mapping(data.get("argocd")).get("namespaces"))
    names: list[Any] = []
    for at, queue in enumerate(_list(queues.get("clusterQueues"))):
        if queue.get("name") in names:
            yield (("clusters", index, "queues", "clusterQueues", at, "name"),
                   f"ClusterQueue {shown(str(queue.get('name')))} is declared twice",
                   "one entry per ClusterQueue")
        names.append(queue.get("name"))
    seen: set[tuple[Any, Any]] = set()
    for at, local in enumerate(_list(queues.get("localQueues"))):
        parts: PointerParts = ("clusters", index, "queues", "localQueues", at)
        if local.get("clusterQueue") not in names:
            yield ((*parts, "clusterQueue"), f"LocalQueue {shown(str(local.get('name')))} "
                   f"points at ClusterQueue {shown(str(local.get('clusterQueue')))}, which "
                   "this cluster's clusterQueues do not declare",
                   "one of: " + (", ".join(map(str, names)) or "(none declared)"))
        namespace = local.get("namespace")
        if namespace is not None and namespace not in allowed:
            yield ((*parts, "namespace"), f"namespace {shown(str(namespace))} is not one of "
                   "argocd.namespaces, where experiments may run",
                   "add it to argocd.namespaces, or remove the LocalQueue")
        key = (local.get("name"), namespace)
        if key in seen:
            yield ((*parts, "name"), f"LocalQueue {shown(str(local.get('name')))} is declared "
                   "twice for " + (f"namespace {namespace}" if namespace else "every namespace"),
                   "one entry per LocalQueue and namespace")
        seen.add(key)
