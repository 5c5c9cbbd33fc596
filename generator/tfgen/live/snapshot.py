"""What one `tfgen status` reads: every kind it needs, one list call per kind and namespace
(never one call per object), kept current by watches for `--watch`.

Per experiment namespace: the pods and claims the chart's objects make, each runtime's jobs
(selected by the chart's part-of label), Kueue's Workloads and LocalQueues; in Argo CD's
namespace: the Applications. A kind the cluster does not serve (its CRD not installed) is
empty and remembered, so status can say so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..repo import chart, runtimes
from ..repo.runtimes import Runtime
from .connect import Api, ClusterUnreachable, Connection, Obj

PODS = Api("", "v1", "pods")
CLAIMS = Api("", "v1", "persistentvolumeclaims")
# Kueue v0.19's API (its Workload: one per queued job, owned by it; its LocalQueue).
WORKLOADS = Api("kueue.x-k8s.io", "v1beta2", "workloads")
LOCAL_QUEUES = Api("kueue.x-k8s.io", "v1beta2", "localqueues")
APPLICATIONS = Api("argoproj.io", "v1alpha1", "applications")
PART_OF = "=".join(chart.PART_OF)  # the label selector of the chart's objects


def job_api(runtime: Runtime) -> Api:
    group, version = runtime.api_version.split("/")
    return Api(group, version, runtime.plural)


def _reads(namespaces: Iterable[str], argocd_namespace: str | None
           ) -> list[tuple[Api, str, str | None]]:
    """(kind, namespace, label selector) of every list a status makes in one cluster; the
    Applications only in Argo CD's (`argocd_namespace` given)."""
    per_namespace: list[tuple[Api, str | None]] = [
        (PODS, PART_OF), (CLAIMS, PART_OF),
        *((job_api(runtime), PART_OF) for runtime in runtimes.RUNTIMES),
        (WORKLOADS, None), (LOCAL_QUEUES, None)]
    apps = [(APPLICATIONS, argocd_namespace, None)] if argocd_namespace else []
    return apps + [(api, namespace, selector) for namespace in sorted(set(namespaces))
                   for api, selector in per_namespace]


@dataclass
class Snapshot:
    """The objects read, by kind and namespace, each by its uid; what the cluster does not
    serve; the resourceVersion each list or watch reached."""

    objects: dict[tuple[Api, str], dict[str, Obj]] = field(default_factory=dict)
    not_served: set[Api] = field(default_factory=set)
    versions: dict[tuple[Api, str], str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Each status looks objects up by name, run or owner: indexes built once per change, so
    # a status of N experiments is linear in what the cluster holds, not N times it.
    generation: int = 0
    _indexes: dict[Any, tuple[int, dict[Hashable, list[Obj]]]] = field(
        default_factory=dict, repr=False)

    def items(self, api: Api, namespace: str) -> list[Obj]:
        with self.lock:
            return list(self.objects.get((api, namespace), {}).values())

    def index(self, api: Api, namespace: str, keys: Callable[[Obj], Iterable[Hashable]]
              ) -> dict[Hashable, list[Obj]]:
        """The objects of a kind in a namespace by each of the keys `keys` gives one (a
        module-level function: the index is kept per function until the next change)."""
        with self.lock:
            kept = self._indexes.get((api, namespace, keys))
            if kept is not None and kept[0] == self.generation:
                return kept[1]
            built: dict[Hashable, list[Obj]] = {}
            for obj in self.objects.get((api, namespace), {}).values():
                for key in keys(obj):
                    built.setdefault(key, []).append(obj)
            self._indexes[(api, namespace, keys)] = (self.generation, built)
            return built

    def named(self, api: Api, namespace: str, name: str) -> Obj | None:
        found = self.index(api, namespace, _name).get(name)
        return found[0] if found else None

    def replace(self, api: Api, namespace: str, items: list[Obj], version: str | None) -> None:
        with self.lock:
            self.objects[(api, namespace)] = {o["metadata"]["uid"]: o for o in items}
            self.generation += 1
            if version:
                self.versions[(api, namespace)] = version

    def apply(self, api: Api, namespace: str, event: Obj) -> bool:
        """One watch event; True when it changed an object."""
        kind, obj = event.get("type"), event.get("object") or {}
        meta = obj.get("metadata") or {}
        with self.lock:
            if meta.get("resourceVersion"):
                self.versions[(api, namespace)] = meta["resourceVersion"]
            if kind == "BOOKMARK":
                return False
            store = self.objects.setdefault((api, namespace), {})
            self.generation += 1
            if kind == "DELETED":
                store.pop(meta.get("uid", ""), None)
            elif kind in ("ADDED", "MODIFIED"):
                store[meta["uid"]] = obj
            else:
                return False
        return True


def _name(obj: Obj) -> tuple[str]:
    return (obj["metadata"]["name"],)


def read(cluster: Connection, namespaces: Iterable[str], argocd_namespace: str | None
         ) -> Snapshot:
    """Every list a status needs of one cluster, once."""
    snapshot = Snapshot()
    for api, namespace, selector in _reads(namespaces, argocd_namespace):
        items, version = cluster.list_with_version(api, namespace, selector)
        snapshot.replace(api, namespace, items, version)
    snapshot.not_served = set(cluster.not_served)
    return snapshot


def watch(cluster: Connection, snapshot: Snapshot, namespaces: Iterable[str],
          argocd_namespace: str | None, changed: threading.Event, stop: threading.Event
          ) -> None:
    """Keep `snapshot` current: a thread per kind and namespace follows its watch and sets
    `changed` on every change; a watch the server ends (or expires: 410) is listed again and
    resumed. Threads are daemons: they end with the command."""
    following = _Following(cluster, snapshot, changed, stop)
    for api, namespace, selector in _reads(namespaces, argocd_namespace):
        if api in snapshot.not_served:
            continue
        threading.Thread(target=following.follow, args=(api, namespace, selector),
                         daemon=True, name=f"watch {api.plural}/{namespace}").start()


@dataclass
class _Following:
    """What every watch thread shares: the cluster, the snapshot it keeps, the two signals."""

    cluster: Connection
    snapshot: Snapshot
    changed: threading.Event
    stop: threading.Event

    def follow(self, api: Api, namespace: str, selector: str | None) -> None:
        snapshot = self.snapshot
        while not self.stop.is_set():
            version = snapshot.versions.get((api, namespace), "")
            try:
                for event in self.cluster.watch(api, namespace, version, selector):
                    if self.stop.is_set():
                        return
                    if event.get("type") == "ERROR":  # 410 Gone: again from a new list
                        items, fresh = self.cluster.list_with_version(api, namespace, selector)
                        snapshot.replace(api, namespace, items, fresh)
                        self.changed.set()
                        break
                    if snapshot.apply(api, namespace, event):
                        self.changed.set()
            except ClusterUnreachable:
                self.stop.wait(2.0)  # the server went away for a moment: try again
