"""Reading a repository's input files safely: the one reader every command uses.

A shared repository holds whatever a pull request put there: a symlink to `/etc/passwd` or
`/dev/zero`, a named pipe that blocks whoever opens it, a symlink loop, a folder where a file
belongs, a file of gigabytes. `read_input` is the only way tfgen reads such input (specs,
tfgen.yaml, the gate's snapshot, the generated files it compares against): it looks before it
opens (no blocking open of a pipe, nothing read from outside the repository, the size limit
checked before reading), opens without following links and without blocking, checks that what it
opened is what it looked at, and reads no more than the limit. Every refusal is one `Refused`
line naming the file and saying what to do; the content of a refused file is never read, so it
never reaches a message.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..errors import InputError

MAX_BYTES = 1024 * 1024  # per input file; a spec is a few kilobytes, the chart's files tens
SIZE_HINT = "tfgen's input files are a few kilobytes; is this the right file?"
OUTSIDE_HINT = "copy what it points to into the repository instead of linking to it"


class Refused(InputError):
    """A file tfgen will not read: `reason` says why, `hint` what to do."""

    def __init__(self, shown: str, reason: str, hint: str = "") -> None:
        super().__init__(f"{shown}: {reason}" + (f" ({hint})" if hint else ""))
        self.shown = shown
        self.reason = reason
        self.hint = hint


CHANGED_WHILE_READ = ("changed while tfgen was reading it (another tfgen writing it, or an "
                      "editor saving it)")


class Changed(Refused):
    """A file that changed between tfgen looking at it and reading it: a race (another tfgen
    render writing argo/, an editor saving), not a fault of the file: exit code 2, as for any
    condition of the machine, and the next run reads it whole."""

    exit_code = 2


def too_large(size: int, limit: int = MAX_BYTES) -> str:
    """The refusal of a file of `size` bytes (one wording for every reader)."""
    mib = f" ({limit // 2**20} MiB)" if limit % 2**20 == 0 else ""
    return f"file is {size:,} bytes; the limit is {limit:,} bytes{mib}"


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # pragma: no cover - doors, whiteouts


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def look_below(path: str, top: str) -> os.stat_result | None:
    """The status of `path` when it lies in `top` and exists with no symlink on the way down
    from `top` (then it is its own real path there: cheaper than resolving every component
    from /); None otherwise, and the careful way decides."""
    if not path.startswith(top.rstrip(os.sep) + os.sep):
        return None
    current = top
    try:
        for part in path[len(top):].strip(os.sep).split(os.sep):
            current = os.path.join(current, part)
            status = os.lstat(current)
            if stat.S_ISLNK(status.st_mode):
                return None
    except OSError:
        return None  # missing, or not a folder on the way: the careful way says which
    return status


def resolve_input(path: Path | str, shown: str, root: Path | str | None = None) -> str:
    """The real path of an input file after every symlink, refused (`Refused`) when a link
    dangles or loops, or leads out of `root` from a path that lies in it.

    A path given outside `root` is a person's explicit choice and is not refused for that.
    """
    text = os.path.abspath(path)
    if root is not None and look_below(text, os.path.abspath(root)) is not None:
        return text
    real = _followed(text, shown)
    if root is not None and real != text:
        top = os.path.abspath(root)
        real_top = os.path.realpath(top)
        lies_inside = _inside(text, top) or _inside(text, real_top)
        if lies_inside and not _inside(real, real_top):
            raise Refused(shown, "is a symbolic link that leads outside the repository; "
                          "tfgen reads only files inside it", OUTSIDE_HINT)
    return real


def _followed(text: str, shown: str) -> str:
    """The absolute path `text` after every symlink, refused when a link dangles or loops (or
    the way cannot be looked at)."""
    try:
        return os.path.realpath(text, strict=True)
    except FileNotFoundError:
        if os.path.lexists(text):
            raise Refused(shown, "is a symbolic link to nothing (its target does not exist)",
                          "remove the link or restore its target") from None
        raise Refused(shown, "no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(shown, "is a symbolic link loop (it leads back to itself)",
                          "remove the link") from None
        raise Refused(shown, f"cannot read: {exc.strerror or exc}") from None


def _looked_at(path: Path | str, shown: str, root: Path | str | None,
               looked: os.stat_result | None) -> tuple[str, os.stat_result]:
    """(the path to open, the status of what it is) for `read_input`."""
    real = os.path.abspath(path)
    if looked is None and root is not None:
        looked = look_below(real, os.path.abspath(root))
    if looked is None:
        real = resolve_input(path, shown, root)
        try:
            looked = os.stat(real)
        except OSError as exc:
            raise Refused(shown, f"cannot read: {exc.strerror or exc}") from None
    return real, looked


def _read_opened(fd: int, shown: str, looked: os.stat_result, limit: int) -> bytes:
    """What the open file `fd` holds, up to one byte more than `limit`, once it is known to be
    the file that was looked at."""
    opened = os.fstat(fd)
    # Swapped between the look and the open (a race, or an attack): judge again next run.
    # The change time too: a file made in another's place may reuse its inode number.
    if (opened.st_dev, opened.st_ino, opened.st_ctime_ns) != (
            looked.st_dev, looked.st_ino, looked.st_ctime_ns) or _kind(
            opened.st_mode) is not None:
        raise Changed(shown, CHANGED_WHILE_READ, "run tfgen again")
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        # the size the file had when looked at (and a byte more, to see it grew), not the
        # limit: a buffer of the limit's size for every small file is memory for nothing
        chunk = os.read(fd, min(limit + 1, looked.st_size + 1) - size or 1 << 16)
        chunks.append(chunk)
        size += len(chunk)
        if not chunk or size == looked.st_size:
            break  # all of it (the size it had when looked at), without one more read
    return b"".join(chunks)


def read_input(
    path: Path | str, shown: str, root: Path | str | None = None, limit: int = MAX_BYTES,
    looked: os.stat_result | None = None,
) -> bytes:
    """The bytes of one input file, or `Refused`: see the module docstring. `shown` is how
    messages name the file; `root` the repository it must not leave through a symlink.
    `looked`: the file's own status as a walk down from `root` through no symlink found it
    (the snapshot's, which has just listed its folder): the way down is not looked at again,
    and what is opened must still be what was looked at."""
    real, looked = _looked_at(path, shown, root, looked)
    kind = _kind(looked.st_mode)
    if kind is not None:
        raise Refused(shown, f"is {kind}, not a regular file",
                      "tfgen reads regular files only; move it away")
    if looked.st_size > limit:
        raise Refused(shown, too_large(looked.st_size, limit), SIZE_HINT)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(
        os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise Refused(shown, f"cannot read: {exc.strerror or exc}") from None
    try:
        data = _read_opened(fd, shown, looked, limit)
    except OSError as exc:
        raise Refused(shown, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew after the look
        raise Refused(shown, too_large(len(data), limit) + " or more", SIZE_HINT)
    return data
