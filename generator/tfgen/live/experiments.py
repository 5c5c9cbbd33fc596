"""The read side's way in: which experiments of the repository to show, and their status from
one snapshot of the cluster, or a new status at every change (`--watch`).

Experiments are read as every command reads them (the validate stage); one that does not
validate is left out and counted, since what it asks is not known.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import OptionsError
from ..repo import layout
from ..validate import validate_repo
from .connect import Cluster
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

    @property
    def namespaces(self) -> list[str]:
        return sorted({w.namespace for w in self.wanted})


def select(names: Sequence[str], cwd: Path | None = None) -> Selection:
    """The experiments named (names or spec files), every one of the repository by default."""
    paths = [layout.experiment_path(name, cwd) for name in names]
    stamp = _stamp(cwd)
    result = validate_repo(paths, cwd=cwd)
    assert result.config is not None
    wanted = [Wanted.of(experiment.data) for experiment in result.experiments]
    if names and not wanted:
        raise OptionsError(f"no valid experiment among {', '.join(names)}: see `tfgen "
                           "validate`")
    return Selection(wanted, str(result.config.argocd["namespace"]), result.invalid_files,
                     tuple(names), cwd, stamp)


def _stamp(cwd: Path | None) -> tuple[tuple[str, int], ...]:
    """Each spec file's and tfgen.yaml's modification time (a stat each: cheap beside a
    status)."""
    root = layout.find_root(cwd=cwd)
    if root is None:
        return ()
    files = [root / layout.CONFIG_NAME, *layout.spec_files(root / layout.EXPERIMENTS_DIR)]
    return tuple((str(f), f.stat().st_mtime_ns) for f in files if f.exists())


def statuses(cluster: Cluster, selection: Selection, snap: Snapshot | None = None
             ) -> list[ExperimentStatus]:
    """Each experiment's status from one snapshot (read now unless given)."""
    if snap is None:
        snap = read(cluster, selection.namespaces, selection.argocd_namespace)
    return [status(w, snap, selection.argocd_namespace) for w in selection.wanted]


def updates(cluster: Cluster, selection: Selection, stop: threading.Event
            ) -> Iterator[list[ExperimentStatus]]:
    """The statuses now, then again after every change the watches see, until `stop`."""
    snap = read(cluster, selection.namespaces, selection.argocd_namespace)
    yield statuses(cluster, selection, snap)
    changed = threading.Event()
    watch(cluster, snap, selection.namespaces, selection.argocd_namespace, changed, stop)
    while not stop.is_set():
        if not changed.wait(timeout=1.0):
            continue
        stop.wait(SETTLE_SECONDS)
        changed.clear()
        selection = selection.again()
        yield statuses(cluster, selection, snap)
