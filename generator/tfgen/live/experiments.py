"""The read side's way in: which experiments of the repository to show, the clusters they run
on, and their status from one snapshot of each cluster, or a new status at every change
(`--watch`).

Experiments are read as every command reads them (the validate stage); one that does not
validate is left out and counted, since what it asks is not known. Each runs on the cluster
tfgen.yaml gives it (`experiment_cluster`), read through that cluster's kubeconfig context;
the Applications are read where Argo CD runs (the context given, else the current one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OptionsError
from ..repo import layout
from ..validate import experiment_cluster, validate_repo
from .connect import Connection
from .snapshot import Snapshot, read, watch
from .status import ExperimentStatus, Wanted, status

# After a change, how long to wait for the next before showing a new status: a sync or an
# admission changes a dozen objects within a second.
SETTLE_SECONDS = 0.3


@dataclass
class Selection:
    """The experiments asked for, what the spec wants of each, and where Argo CD runs."""

    wanted: list[Wanted]
    argocd_namespace: str
    invalid: int  # specs left out: they do not validate
    names: tuple[str, ...] = ()
    cwd: Path | None = None
    stamp: tuple[tuple[str, int], ...] = ()  # the spec files and tfgen.yaml as read

    def again(self) -> Selection:
        """The same experiments read again when a spec or tfgen.yaml changed since (a
        `tfgen retire` or a suspend while `--watch` runs), else itself."""
        return self if _stamp(self.cwd) == self.stamp else select(self.names, self.cwd)


def select(names: Sequence[str], cwd: Path | None = None) -> Selection:
    """The experiments named (names or spec files), every one of the repository by default."""
    paths = [layout.experiment_path(name, cwd) for name in names]
    stamp = _stamp(cwd)
    result = validate_repo(paths, cwd=cwd)
    config = result.config
    assert config is not None
    wanted = [Wanted.of(e.data, experiment_cluster(config, e.data))
              for e in result.experiments]
    if names and not wanted:
        raise OptionsError(f"no valid experiment among {', '.join(names)}: see `tfgen "
                           "validate`")
    return Selection(wanted, str(config.argocd["namespace"]), result.invalid_files,
                     tuple(names), cwd, stamp)


def _stamp(cwd: Path | None) -> tuple[tuple[str, int], ...]:
    """Each spec file's and tfgen.yaml's modification time (a stat each: cheap beside a
    status)."""
    root = layout.find_root(cwd=cwd)
    if root is None:
        return ()
    files = [root / layout.CONFIG_NAME, *layout.spec_files(root / layout.EXPERIMENTS_DIR)]
    return tuple((str(f), f.stat().st_mtime_ns) for f in files if f.exists())


@dataclass
class Connections:
    """A connection per kubeconfig context the selection needs: Argo CD's (`argocd`, the
    context given or the current one) and each cluster's own `context`."""

    connect: Callable[[str | None], Connection]  # a context (None: the one given) -> connection
    argocd: Connection
    by_context: dict[str | None, Connection] = field(default_factory=dict)

    def of(self, context: str | None) -> Connection:
        if context is None:
            return self.argocd
        if context not in self.by_context:
            self.by_context[context] = self.connect(context)
        return self.by_context[context]

    @property
    def calls(self) -> int:
        return self.argocd.calls + sum(c.calls for c in self.by_context.values()
                                       if c is not self.argocd)


def _readers(clusters: Connections, selection: Selection
             ) -> list[tuple[Connection, list[str], str | None]]:
    """(connection, namespaces, Argo CD's namespace where it is that cluster) per cluster."""
    namespaces: dict[int, set[str]] = {}
    connections = {id(clusters.argocd): clusters.argocd}
    for wanted in selection.wanted:
        cluster = clusters.of(wanted.context)
        connections[id(cluster)] = cluster
        namespaces.setdefault(id(cluster), set()).add(wanted.namespace)
    return [(cluster, sorted(namespaces.get(key, ())),
             selection.argocd_namespace if cluster is clusters.argocd else None)
            for key, cluster in connections.items()]


def _statuses(clusters: Connections, selection: Selection, snaps: dict[int, Snapshot]
              ) -> list[ExperimentStatus]:
    apps = snaps[id(clusters.argocd)]
    return [status(w, snaps[id(clusters.of(w.context))], apps, selection.argocd_namespace)
            for w in selection.wanted]


def statuses(clusters: Connections, selection: Selection) -> list[ExperimentStatus]:
    """Each experiment's status from one snapshot of each cluster, read now."""
    snaps = {id(cluster): read(cluster, namespaces, argocd)
             for cluster, namespaces, argocd in _readers(clusters, selection)}
    return _statuses(clusters, selection, snaps)


def updates(clusters: Connections, selection: Selection, stop: threading.Event
            ) -> Iterator[list[ExperimentStatus]]:
    """The statuses now, then again after every change the watches see, until `stop`."""
    readers = _readers(clusters, selection)
    snaps = {id(cluster): read(cluster, namespaces, argocd)
             for cluster, namespaces, argocd in readers}
    yield _statuses(clusters, selection, snaps)
    changed = threading.Event()
    for cluster, namespaces, argocd in readers:
        watch(cluster, snaps[id(cluster)], namespaces, argocd, changed, stop)
    while not stop.is_set():
        if not changed.wait(timeout=1.0):
            continue
        stop.wait(SETTLE_SECONDS)
        changed.clear()
        fresh = selection.again()
        # a spec moved to a cluster or namespace not watched yet is read at the next start
        if {(w.context, w.namespace) for w in fresh.wanted} <= \
                {(w.context, w.namespace) for w in selection.wanted}:
            selection = fresh
        yield _statuses(clusters, selection, snaps)
