"""Log directories across experiments: no two active runs may write their event logs and
checkpoints to the same place.

Two specs whose TensorBoard log directory resolves to the same folder of the same volume (the
same NAS server and path, or the same existing claim in the same namespace, plus the log
directory relative to the mount path) would share it: a rerun's TensorFlow would restore the
old run's checkpoints instead of starting fresh, and TensorBoard would mix both runs' curves.
Retired experiments write nothing any more and do not count.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from ..problems import Problem
from .checked import Checked, Collector, lookup, spec_is_retired

LOG_DIR = ("spec", "tensorboard", "logDir")


def location(data: Any) -> tuple[str, str] | None:
    """(the volume, the log directory inside it) a spec's logDir resolves to, or None when it
    has none or the spec is too broken to say (its own problems say why)."""
    storage, log_dir = lookup(data, "spec", "storage"), lookup(data, *LOG_DIR)
    mount = lookup(storage, "mountPath")
    if not (isinstance(log_dir, str) and isinstance(mount, str) and log_dir.startswith("/")
            and mount.startswith("/")):
        return None
    root, logs = posixpath.normpath(mount), posixpath.normpath(log_dir)
    prefix = root.rstrip("/") + "/"
    if not logs.startswith(prefix):
        return None  # outside the volume: rules.py reports it
    inside = logs[len(prefix):]  # both normalised: what posixpath.relpath gives, cheaper
    nas, claim = lookup(storage, "nas"), lookup(storage, "existingClaim")
    if isinstance(nas, dict) and isinstance(nas.get("path"), str):
        server = nas.get("server") if isinstance(nas.get("server"), str) else ""
        return f"NAS {server}:{nas['path']}", posixpath.normpath(posixpath.join(nas["path"],
                                                                               inside))
    namespace = lookup(data, "metadata", "namespace")
    if isinstance(claim, str) and claim and isinstance(namespace, str):
        return f"claim {namespace}/{claim}", "/" + inside
    return None


def collision_problems(experiments: Sequence[Checked]) -> list[Problem]:
    """Each active experiment whose log directory another active one shares, on its logDir."""
    by_place: dict[tuple[str, str], list[Checked]] = {}
    for item in experiments:
        place = None if spec_is_retired(item.data) else location(item.data)
        if place is not None:
            by_place.setdefault(place, []).append(item)
    problems: list[Problem] = []
    for (volume, folder), items in by_place.items():
        if len({repr(lookup(i.data, "metadata", "name")) for i in items}) < 2:
            continue  # one name twice: the duplicate name is the problem (rules.py says so)
        for item in items:
            others = ", ".join(o.shown for o in items if o is not item)
            mount = str(lookup(item.data, "spec", "storage", "mountPath")).rstrip("/")
            name = lookup(item.data, "metadata", "name")
            out = Collector(item.locator)
            out.add(LOG_DIR, f"is {folder} on {volume}, the log directory of {others} too: a "
                    "rerun would restore the old run's checkpoints and mix its curves",
                    f"give this run its own logDir, e.g. {mount}/{name}/logs, and point its "
                    "args there too", key=False)
            problems += out.problems
    return problems
