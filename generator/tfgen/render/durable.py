"""Files on disk whole or not at all: the temporary file a new content is written to, and
the flushes that put it on disk before it is moved into place.

A temporary file is made next to its target (`.<name>.tfgen-tmp-<random>`, created with
O_EXCL and O_NOFOLLOW: never an existing file, never through a link) and flushed by its own
fsync, or, when a caller writes many at once, by one `syncfs` of each file system they are on
(Linux; `filesystems` says None elsewhere). `write.py` moves them into place; `tfgen import`
links its new spec from one.
"""

from __future__ import annotations

import ctypes
import functools
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path

from ..repo import layout

# Names tried for one temporary file before giving up (a taken one is a 1 in 2**48 chance).
TEMP_ATTEMPTS = 16


def write_temp(target: Path, data: bytes, mode: int | None = None, *,
               fsync: bool = True) -> Path:
    """A new temporary file next to `target` holding `data`, fsynced unless the caller
    flushes its whole file system later (`fsync`), ready to be moved into place. Its mode is
    `mode`, else the one the umask gives any new file. A failure leaves nothing behind."""
    fd, temp = _create_temp(target)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        rest = memoryview(data)
        while rest:
            rest = rest[os.write(fd, rest):]
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temp


def _create_temp(target: Path) -> tuple[int, Path]:
    """A temporary name next to `target`, created and opened for writing, with a fresh name
    when one was taken. (Not `tempfile.mkstemp`: it makes each name in Python, and a first
    render makes twenty thousand.)"""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    taken = 0
    while True:
        temp = target.with_name(f".{target.name}{layout.TEMP_MARK}{secrets.token_hex(6)}")
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            taken += 1
            if taken == TEMP_ATTEMPTS:
                raise


def fsync_dir(directory: Path) -> None:
    """Flush a folder's entries (the renames into it) to disk."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def filesystems(folders: Iterable[Path]) -> list[Path] | None:
    """A folder on each file system among `folders`, to flush each with `sync_filesystem`;
    None where the C library has no `syncfs` (then each file and folder is fsynced)."""
    if _syncfs() is None:
        return None
    return list({os.stat(folder).st_dev: folder for folder in sorted(folders)}.values())


def sync_filesystem(folder: Path) -> None:
    """Flush to disk everything written to the file system `folder` is on (`syncfs`),
    whoever wrote it; OSError when the file system reports a failure."""
    syncfs = _syncfs()
    assert syncfs is not None, "filesystems() said there is no syncfs"
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if syncfs(fd) != 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error))
    finally:
        os.close(fd)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """The C library's `syncfs` (Linux: flush one file system), None where there is none."""
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None
