"""The render lock: one render writes argo/ at a time.

`render_lock` holds a lock on `argo/.tfgen-render.lock` (flock, released by the kernel when
the process dies, so a killed render never wedges the next), and a render that finds it held
waits a few seconds, then gives up naming the holder (exit 2).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import EnvironmentProblem, TfgenError
from ..repo import layout

# How long a render waits for another one to finish writing before it gives up (exit 2).
LOCK_WAIT_SECONDS = 5.0


class RenderLocked(EnvironmentProblem):
    """Another render holds the lock on argo/ and did not let go in time."""


@contextlib.contextmanager
def render_lock(root: Path, wait_seconds: float | None = None) -> Iterator[None]:
    """Hold the render lock of the repository at `root` (see the module docstring); wait at
    most `wait_seconds` (default LOCK_WAIT_SECONDS) for another render to let go.

    The lock file holds the holder's process id and is removed on release; a lock taken on a
    file that was removed meanwhile is dropped and taken again on the new one.
    """
    path = root / layout.RENDER_LOCK
    wait_seconds = LOCK_WAIT_SECONDS if wait_seconds is None else wait_seconds
    deadline = time.monotonic() + wait_seconds
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TfgenError(f"cannot write {layout.shown(path.parent)}: "
                         f"{exc.strerror or exc}") from exc
    fd = _lock_file(path, deadline, wait_seconds)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def _lock_file(path: Path, deadline: float, wait_seconds: float) -> int:
    """The lock file at `path`, open and locked: tried until `deadline`, then `RenderLocked`."""
    shown = layout.shown(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    while True:
        try:
            fd = os.open(path, flags, 0o666)
        except OSError as exc:
            raise TfgenError(f"{shown}: cannot open the render lock: {exc.strerror or exc} "
                             "(tfgen makes and removes this file; remove whatever is there "
                             "instead)") from exc
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise TfgenError(f"{shown}: is not a lock file tfgen made (remove it)")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            if time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            who = f" (process {holder})" if holder.isdigit() else ""
            raise RenderLocked(
                f"another tfgen render{who} is writing argo/ and still holds {shown} after "
                f"{wait_seconds:g} s; run `tfgen render` again when it has finished") from None
        except BaseException:
            os.close(fd)
            raise
        if _still_there(path, opened):
            return fd
        os.close(fd)  # the holder before us removed it: lock the file now there


def _still_there(path: Path, opened: os.stat_result) -> bool:
    """Whether the file locked is still the one at `path` (its holder removes it on release)."""
    try:
        current = os.lstat(path)
    except FileNotFoundError:
        return False
    return (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino)
