"""`tfgen logs`: the training container's log of an experiment's pods, chosen by run, role and
index, each line behind the pod's name as `run-local` prints it (`<run>-<role>-<index>`), so
nobody needs a JobSet's pod names (`<run>-<role>-0-<index>-xxxxx`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import OptionsError
from ..repo import naming, runtimes
from .connect import Connection, lines_of
from .snapshot import PART_OF, PODS
from .status import Wanted


@dataclass(frozen=True)
class PodLog:
    """One pod whose log is shown: the name lines are prefixed with, the pod's real name."""

    shown: str
    pod: str
    namespace: str


def choose(cluster: Connection, wanted: Wanted, run: str | None, role: str | None,
           index: int | None) -> list[PodLog]:
    """The experiment's pods that match, in run, role and index order (one list call)."""
    runs = [r for r in wanted.runs if run is None or r == run or r.endswith(f"-{run}")]
    if not runs:
        raise OptionsError(f"{wanted.name} has no run {run!r}: its runs are "
                           f"{', '.join(wanted.runs)}")
    if role is not None and role not in wanted.replicas:
        raise OptionsError(f"{wanted.name} has no role {role!r}: its roles are "
                           f"{', '.join(wanted.replicas)}")
    order = {r: i for i, r in enumerate(naming.ROLES)}
    found = []
    for pod in cluster.objects(PODS, wanted.namespace, PART_OF):
        place = wanted.runtime.pod_place(pod["metadata"].get("labels") or {})
        if place is None or place[0] not in runs:
            continue
        pod_run, pod_role, pod_index = place
        if (role is None or pod_role == role) and (index is None or pod_index == index):
            found.append(((runs.index(pod_run), order.get(pod_role, 99), pod_index),
                          PodLog(naming.pod_name(pod_run, pod_role, pod_index),
                                 pod["metadata"]["name"], wanted.namespace)))
    return [log for _, log in sorted(found, key=lambda f: f[0])]


def _stream(cluster: Connection, log: PodLog, follow: bool) -> Iterator[str]:
    path = f"/api/v1/namespaces/{log.namespace}/pods/{log.pod}/log"
    response = cluster.request(path, {"container": runtimes.CONTAINER,
                                      "follow": "true" if follow else None}, stream=True)
    if response is not None:
        yield from (line.decode(errors="replace") for line in lines_of(response))


def lines(cluster: Connection, logs: list[PodLog], follow: bool) -> Iterator[tuple[str, str]]:
    """(prefix, line) of every chosen pod: one pod after the other, or, following, as the
    lines come from all of them at once (a thread per pod)."""
    width = max((len(log.shown) for log in logs), default=0)
    if not follow:
        for log in logs:
            yield from ((log.shown.ljust(width), line) for line in _stream(cluster, log, False))
        return
    out: queue.Queue[tuple[str, str] | None] = queue.Queue()

    def pump(log: PodLog) -> None:
        try:
            for line in _stream(cluster, log, True):
                out.put((log.shown.ljust(width), line))
        finally:
            out.put(None)
    for log in logs:
        threading.Thread(target=pump, args=(log,), daemon=True).start()
    open_streams = len(logs)
    while open_streams:
        item = out.get()
        if item is None:
            open_streams -= 1
        else:
            yield item

