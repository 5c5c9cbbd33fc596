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
from collections.abc import Collection, Sequence
from typing import Any

from ...problems import Problem
from ..experiment.checked import Checked, Collector, lookup, spec_is_retired
from ..experiment.logdir import LOG_DIR


def location(data: Any) -> tuple[str, str] | None:
    """(the volume, the log directory inside it) a spec's logDir resolves to, or None when it
    has none or the spec is too broken to say (its own problems say why)."""
    storage = lookup(data, "spec", "storage")
    inside = _inside(lookup(storage, "mountPath"), lookup(data, *LOG_DIR))
    if inside is None:
        return None
    nas, claim = lookup(storage, "nas"), lookup(storage, "existingClaim")
    if isinstance(nas, dict) and isinstance(nas.get("path"), str):
        server = nas.get("server") if isinstance(nas.get("server"), str) else ""
        return f"NAS {server}:{nas['path']}", posixpath.normpath(posixpath.join(nas["path"],
                                                                               inside))
    namespace = lookup(data, "metadata", "namespace")
    if isinstance(claim, str) and claim and isinstance(namespace, str):
        return f"claim {namespace}/{claim}", "/" + inside
    return None


def _inside(mount: Any, log_dir: Any) -> str | None:
    """The log directory relative to the mount path, None unless both are absolute and the log
    directory lies under the mount path."""
    if not (isinstance(log_dir, str) and isinstance(mount, str) and log_dir.startswith("/")
            and mount.startswith("/")):
        return None
    root, logs = posixpath.normpath(mount), posixpath.normpath(log_dir)
    prefix = root.rstrip("/") + "/"
    if not logs.startswith(prefix):
        return None  # outside the volume: rules/spec.py reports it
    return logs[len(prefix):]  # both normalised: what posixpath.relpath gives, cheaper


def blamed(items: Sequence[Checked], focus: Collection[str] | None) -> list[Checked]:
    """Which of the files that clash gets the problem: those being added or changed (`focus`:
    shown paths, when the caller knows them) when some of them are and some are not (the
    untouched ones are not to blame), else each of them."""
    if focus is None:
        return list(items)
    added = [item for item in items if item.shown in focus]
    return added if added and len(added) < len(items) else list(items)


def collision_problems(experiments: Sequence[Checked],
                       focus: Collection[str] | None = None) -> list[Problem]:
    """Each active experiment whose log directory another active one shares, on its logDir
    (of those `blamed`)."""
    by_place: dict[tuple[str, str], list[Checked]] = {}
    for item in experiments:
        place = None if spec_is_retired(item.data) else location(item.data)
        if place is not None:
            by_place.setdefault(place, []).append(item)
    problems: list[Problem] = []
    for (volume, folder), items in by_place.items():
        if len({repr(lookup(i.data, "metadata", "name")) for i in items}) < 2:
            continue  # one name twice: the duplicate name is the problem (names.py says so)
        for item in blamed(items, focus):
            others = ", ".join(o.shown for o in items if o is not item)
            own = posixpath.join(str(lookup(item.data, *LOG_DIR)),
                                 str(lookup(item.data, "metadata", "name")))
            out = Collector(item.locator)
            out.add(LOG_DIR, f"is {folder} on {volume}, the log directory of {others} too: a "
                    "rerun would restore the old run's checkpoints and mix its curves",
                    f"give this run its own logDir, e.g. {own}, and point its args there "
                    "too", key=False)
            problems += out.problems
    return problems
