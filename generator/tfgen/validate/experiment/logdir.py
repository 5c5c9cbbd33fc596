"""An experiment's log directory, and the fields that tell its program where it is.

`spec.tensorboard.logDir` is where a run's event logs (and, by convention, its checkpoints)
go; a program is told the path through its args or env values, at spec level or a role's. A
new run needs a directory of its own (`tfgen new --from`, `tfgen rerun`, `tfgen import
--log-dir`): the log directory is moved, and every arg and env value that used it follows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..yaml.document import PointerParts, pointer_text

LOG_DIR = ("spec", "tensorboard", "logDir")


def uses_args_or_env(path: PointerParts) -> bool:
    """An arg or an env value, at spec level or a role's: where a program is told its paths."""
    tail = path[1:] if path[:1] == ("spec",) else ()
    if tail[:1] == ("roles",) and len(tail) > 2:
        tail = tail[2:]
    return (len(tail) == 2 and tail[0] == "args") or (
        len(tail) == 3 and tail[0] == "env" and tail[2] == "value")


def repointer(old: str, new: str) -> Callable[[str], str]:
    """A function replacing the directory `old` where a value uses it as a path (the whole
    path, or a folder above more of it), never inside a longer name (`/logs` in `/logs2`)."""
    pattern = re.compile(rf"(?<![\w./-]){re.escape(old.rstrip('/'))}(?![\w.-])")
    return lambda value: pattern.sub(new.rstrip("/"), value)


def _strings(node: Any, path: PointerParts) -> list[tuple[Any, str | int, PointerParts]]:
    """Every string under `node`: (its container, its key or index, its path)."""
    items = (node.items() if isinstance(node, dict)
             else enumerate(node) if isinstance(node, list) else ())
    out: list[tuple[Any, str | int, PointerParts]] = []
    for key, value in items:
        if isinstance(value, str):
            out.append((node, key, (*path, key)))
        else:
            out += _strings(value, (*path, key))
    return out


def move_log_dir(data: dict[str, Any], new: str) -> list[tuple[str, str, str]]:
    """Point a spec (as data, changed in place) at the log directory `new`: its logDir, and
    every arg and env value that used the old one; each field changed as (pointer, old, new).
    Nothing when the spec has no log directory."""
    tensorboard = (data.get("spec") or {}).get("tensorboard")
    old = tensorboard.get("logDir") if isinstance(tensorboard, dict) else None
    if not isinstance(old, str) or not old or old == new:
        return []
    repoint = repointer(old, new)
    changed = []
    for container, key, path in _strings(data.get("spec"), ("spec",)):
        if path == LOG_DIR or uses_args_or_env(path):
            value = container[key]
            moved = new if path == LOG_DIR else repoint(value)
            if moved != value:
                container[key] = moved
                changed.append((pointer_text(path), value, moved))
    return changed
