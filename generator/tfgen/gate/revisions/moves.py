"""`--base`: a started run sent to another cluster.

Each experiment's Application goes to its cluster's Argo CD destination (its app.yaml, which
render writes from the spec's cluster). A run whose destination changed since the base, by its
`spec.cluster`, its namespace's home cluster or the cluster's destination in tfgen.yaml, would
be created anew on the other cluster, and the live one left behind untracked: like a switch of
runtime, it is a new run (`tfgen rerun`). Judged on what `tfgen render` would write (a stale
app.yaml's replacement in the plan's updates), and said at the spec's `spec.cluster`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...errors import InputError
from ...problems import Problem
from ...repo import layout
from ...validate.yaml.loader import load_bytes, load_file
from ..argo.applications import ResolvedApplication
from ..objects.verdict import AppObjects

HINT = ("a started run stays on its cluster: set spec.cluster: {was} to keep it there, and "
        "start a new run on {goes}, `tfgen rerun {name} --as NEW` (with --cluster {goes})")


def params(app: ResolvedApplication, text: str | None = None) -> dict[str, Any]:
    """An Application's app.yaml parameters: `text` (what render would write), else its
    generator file; empty when unreadable."""
    with contextlib.suppress(InputError, OSError):
        document = (load_bytes(text.encode(), str(app.generator_file)) if text is not None
                    else load_file(app.generator_file))
        return document.data if isinstance(document.data, dict) else {}
    return {}


def cluster_words(app: ResolvedApplication, given: Mapping[str, Any]) -> str:
    """`gpu-a`, tfgen's name for the cluster an Application goes to (its app.yaml's
    `cluster`), else its destination: `server https://...` or `Argo CD cluster gpu-b`."""
    name = given.get("cluster")
    if isinstance(name, str) and name:
        return name
    return (f"server {app.destination_server}" if app.destination_server
            else f"Argo CD cluster {app.destination_name}")


def _where(app: ResolvedApplication, given: Mapping[str, Any]) -> str:
    """`cluster gpu-a (server https://...)`: the destination, with tfgen's name for it."""
    place = (f"server {app.destination_server}" if app.destination_server
             else f"Argo CD cluster {app.destination_name}")
    name = given.get("cluster")
    return f"cluster {name} ({place})" if isinstance(name, str) and name else place


def as_written(app: ResolvedApplication, given: Mapping[str, Any]) -> ResolvedApplication:
    """The Application with the destination its app.yaml parameters `given` say."""
    destination = given.get("destination")
    if not isinstance(destination, Mapping):
        return app
    return replace(app, destination_server=str(destination.get("server") or ""),
                   destination_name=str(destination.get("name") or ""))


def moved(before: ResolvedApplication, now: ResolvedApplication) -> bool:
    return ((before.destination_server, before.destination_name)
            != (now.destination_server, now.destination_name))


def move_problem(spec_path: str, before: ResolvedApplication, before_params: Mapping[str, Any],
                 now: ResolvedApplication, now_params: Mapping[str, Any]) -> Problem:
    """A started run sent to another destination, said at its spec's `spec.cluster`."""
    line, col = 0, 0
    with contextlib.suppress(InputError):
        line, col = load_file(spec_path).locate(("spec", "cluster"))
    was_name = before_params.get("cluster") or "<its cluster>"
    goes_name = now_params.get("cluster") or "<the other cluster>"
    return Problem(spec_path, line, col, pointer="$.spec.cluster",
                   message=f"{now.name} moves from {_where(before, before_params)} to "
                   f"{_where(now, now_params)}, which a started run cannot take: Argo CD would "
                   "start it anew there and leave the live run untracked where it runs",
                   hint=HINT.format(was=was_name, goes=goes_name, name=now.name))


def move_problems(pairs: Sequence[tuple[ResolvedApplication, AppObjects]],
                  updates: Mapping[str, str]) -> list[Problem]:
    """Each experiment whose Application's destination at the base (first of each pair, read
    while the base's tree is there) differs from what render would now write."""
    out = []
    for before, current in pairs:
        rel = layout.generated_paths(current.app.name)[1]
        now_params = params(current.app, updates.get(rel))
        now = as_written(current.app, now_params)
        if moved(before, now):
            out.append(move_problem(current.path, before, params(before), now, now_params))
    return out
