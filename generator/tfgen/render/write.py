"""Writing a render plan: every file complete or not at all, and only files tfgen made.

New and changed files are written through a temporary file in the same directory
(`.<name>.tfgen-tmp-<random>`, with the mode the umask gives), flushed to disk, and moved into
place with `os.replace`, so a reader sees the old file or the new one, never half of one;
unchanged files are untouched (their mtime kept); orphans are deleted only on request, and
only while they still carry tfgen's header. A few files are flushed by an fsync each (and
their folders after the renames); many at once (a first render) by one `syncfs` of each file
system before the renames and one after, which also flushes whatever else waits to be written
there.

One render writes at a time: `apply_plan` holds the render lock (`lock`). The next render,
under the lock, removes the temporary files a killed one left behind, and writes only into
real folders inside the repository.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from ..errors import TfgenError
from ..repo import layout
from ..repo.files import Refused, read_input
from . import durable
from .generated import is_generated
from .lock import render_lock
from .plan import CREATE, ORPHAN, UPDATE, RenderPlan


@dataclass
class ApplyResult:
    """What `apply_plan` did: paths written and removed, plus orphans it left in place."""

    written: list[str]
    removed: list[str]
    kept_orphans: list[str]


# Staging threads: writing a file is waiting on the file system (create, write, fsync), and
# fsyncs issued together share the journal commits that sequential ones each wait for.
WRITERS = 8
# Files written at once from which one flush of the file system replaces an fsync per file.
SYNC_AT_ONCE = 64


def remove_stale_temps(root: Path) -> list[str]:
    """Delete the temporary files a killed render left in argo/, argo/experiments/*/ and
    .github/ (only under the render lock: a live render's are its own). Returns their paths."""
    removed: list[str] = []
    argo = root / layout.ARGO_DIR
    folders = [argo, root / layout.CODEOWNERS_FOLDER]
    with contextlib.suppress(OSError), os.scandir(root / layout.GENERATED_DIR) as scan:
        folders += [Path(e.path) for e in scan if e.is_dir(follow_symlinks=False)]
    for folder in folders:
        try:
            with os.scandir(folder) as scan:
                stale = [e for e in scan if layout.is_temp_name(e.name)
                         and not e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(Path(entry.path).relative_to(root).as_posix())
    return removed


def _stage(target: Path, content: str, temps: dict[Path, Path], mode: int | None = None,
           fsync: bool = True) -> None:
    """Stage `content` for `target` (`write_temp`), recorded in `temps` to be moved or removed."""
    temps[target] = durable.write_temp(target, content.encode("utf-8"), mode, fsync=fsync)


def replace_file(target: Path, content: str) -> None:
    """Replace one existing file (a spec `tfgen retire` edits) atomically: readers see the old
    bytes or the new ones, never a part; its mode is kept."""
    temps: dict[Path, Path] = {}
    try:
        _stage(target, content, temps, target.stat().st_mode & 0o7777)
        os.replace(temps.pop(target), target)
        durable.fsync_dir(target.parent)
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)


def _stage_all(root: Path, jobs: list[tuple[str, Path, str]], temps: dict[Path, Path],
               at_once: list[Path] | None) -> None:
    """Stage every (path, target, content) in parallel, then have it on disk: each fsynced, or
    all by one sync of each file system `at_once`. Raises `_WriteFailed` (the first in order)."""
    if not jobs:
        return
    fsync = at_once is None
    pool = ThreadPoolExecutor(max_workers=min(WRITERS, len(jobs)))
    interrupted = True  # by Ctrl-C, say: then the jobs not yet started are dropped
    try:
        futures = [pool.submit(_stage, target, content, temps, fsync=fsync)
                   for _, target, content in jobs]
        wait(futures)
        interrupted = False
    finally:
        pool.shutdown(wait=True, cancel_futures=interrupted)
    for (rel, _, _), future in zip(jobs, futures, strict=True):
        error = None if future.cancelled() else future.exception()
        if isinstance(error, OSError):
            raise _WriteFailed(rel, error) from error
        if error is not None:
            raise error
    if at_once is not None:
        _sync_filesystems(root, at_once)


def apply_plan(plan: RenderPlan, *, prune: bool = False) -> ApplyResult:
    """Write the plan under the render lock: creates and updates atomically, orphans removed
    only with `prune`.

    All new contents are staged (written next to their targets and flushed to disk) before
    the first rename, so a failure while writing leaves every target untouched; a failure
    between renames leaves each file either wholly old or wholly new. A file that already
    holds its new content (a render that ran while this one waited for the lock) is left
    alone.
    """
    with render_lock(plan.root):
        remove_stale_temps(plan.root)
        written = _write(plan)
        removed, kept = _orphans(plan, prune)
    if plan.on_written is not None:  # every created or updated file now holds its content
        plan.on_written({c.path: c.new or "" for c in plan.changes
                         if c.action in (CREATE, UPDATE)})
    return ApplyResult(written=written, removed=removed, kept_orphans=kept)


def write_new_files(root: Path, files: dict[str, str]) -> list[str]:
    """Write files that do not exist yet (`tfgen init`): each one complete or not at all, as
    `apply_plan` writes, with every folder created inside `root`. Returns the paths written."""
    return _written(root, files, skip_same=False)


def write_files(root: Path, files: dict[str, str]) -> list[str]:
    """Create or replace files (`tfgen upgrade`), as `write_new_files` writes them; one that
    holds its content already is left alone. Returns the paths written."""
    return _written(root, files, skip_same=True)


def _written(root: Path, files: dict[str, str], *, skip_same: bool) -> list[str]:
    try:
        return _put_files(root, sorted(files.items()), [], skip_same=skip_same)
    except _WriteFailed as failed:
        raise TfgenError(f"cannot write {failed.path}: {failed.reason}") from failed


def blocked_paths(root: Path, rels: Iterable[str], *, folders: Iterable[str] = ()) -> list[str]:
    """What stands in the way of writing the files `rels` (and of the `folders`) under `root`,
    repository-relative, found before anything changes: a symbolic link or a file where a
    folder must be, a link or a folder where a file must be, a link where a folder must be."""
    out: dict[str, str] = {}
    for rel, is_folder in [*((r, False) for r in rels), *((f, True) for f in folders)]:
        parts = Path(rel).parts
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth])
            try:
                mode = os.lstat(root / here).st_mode
            except FileNotFoundError:
                break  # made when written
            why = _in_the_way(mode, folder=depth < len(parts) or is_folder)
            if why is not None:
                out[here] = why
                break
    return [f"{rel} {why}" for rel, why in sorted(out.items())]


def _in_the_way(mode: int, *, folder: bool) -> str | None:
    """Why an entry of `mode` cannot stay where a folder (or else a file) will be written."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if folder and not stat.S_ISDIR(mode):
        return "is a file where a folder must be"
    if not folder and not stat.S_ISREG(mode):
        return "is not a regular file"
    return None


class _WriteFailed(Exception):
    def __init__(self, path: str, error: OSError) -> None:
        super().__init__(path)
        self.path, self.reason = path, error.strerror or str(error)


def _put_files(root: Path, files: list[tuple[str, str]], written: list[str], *,
               skip_same: bool) -> list[str]:
    """Create the folders (real ones inside `root`), stage every content, then rename each
    into place, appending to `written` as it goes; `skip_same` leaves alone a file that
    already holds its content. Raises _WriteFailed naming the path that failed."""
    jobs = [(rel, root / rel, content) for rel, content in files]
    temps: dict[Path, Path] = {}
    folders: set[Path] = set()
    real = {root}  # the folders known to be real ones below the root, the root itself first
    current = ""
    try:
        for rel, target, _ in jobs:
            if target.parent not in folders:
                current = rel
                _real_folder(target.parent, real)
                folders.add(target.parent)
        if skip_same:
            jobs = _not_held(jobs, root)
        # Many files: each one's data and each folder's new entries are flushed by one call per
        # file system, not by an fsync per file and per folder (at ten thousand experiments,
        # two seconds of the first render). Either way, every staged file is on disk before
        # the first rename, and every rename before the render says it is done.
        at_once = durable.filesystems(folders) if len(jobs) >= SYNC_AT_ONCE else None
        _stage_all(root, jobs, temps, at_once)
        for rel, target, _ in jobs:
            current = rel
            os.replace(temps[target], target)
            written.append(rel)
        if at_once is not None:
            _sync_filesystems(root, at_once)
        else:
            with ThreadPoolExecutor(max_workers=WRITERS) as pool:
                list(pool.map(durable.fsync_dir, sorted(folders)))
    except OSError as exc:
        raise _WriteFailed(current, exc) from exc
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
    return written


def _not_held(jobs: list[tuple[str, Path, str]], root: Path) -> list[tuple[str, Path, str]]:
    """The jobs whose file does not hold its content yet (another render may have written it)."""
    return [(rel, target, content) for rel, target, content in jobs
            if not _holds(target, content, root)]


def _sync_filesystems(root: Path, folders: Iterable[Path]) -> None:
    """Flush the file system of each folder below `root` to disk; a failure names the
    folder."""
    for folder in folders:
        try:
            durable.sync_filesystem(folder)
        except OSError as exc:
            raise _WriteFailed(f"{folder.relative_to(root).as_posix()}/", exc) from exc


def _holds(target: Path, content: str, root: Path) -> bool:
    if not os.path.lexists(target):
        return False  # most often so: a new file (the reader would say so the long way)
    try:
        return read_input(target, layout.shown(target), root) == content.encode("utf-8")
    except Refused:
        return False


def _real_folder(folder: Path, real: set[Path]) -> None:
    """Make `folder` a real folder below one of `real` (the root and those checked before):
    each folder on the way is created when missing and refused when it is a symbolic link
    (nothing is created through one), and added to `real`. One `lstat` a folder, not a walk
    from / for each of ten thousand experiment folders."""
    if folder in real:
        return
    if folder.parent == folder:
        raise TfgenError(f"cannot write into {folder}: it is not inside the repository")
    _real_folder(folder.parent, real)
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder)
    mode = os.lstat(folder).st_mode
    if stat.S_ISLNK(mode):
        raise TfgenError(f"cannot write into {layout.shown(folder)}: it is, or lies under, a "
                         "symbolic link, and tfgen writes only into real folders inside the "
                         "repository (remove the link, then run `tfgen render` again)")
    if not stat.S_ISDIR(mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    real.add(folder)


def _write(plan: RenderPlan) -> list[str]:
    files = [(c.path, c.new or "") for c in plan.changes if c.action in (CREATE, UPDATE)]
    written: list[str] = []
    try:
        return _put_files(plan.root, files, written, skip_same=True)
    except _WriteFailed as failed:
        raise TfgenError(
            f"cannot write {failed.path}: {failed.reason}; {len(written)} of "
            f"{len(files)} files written, each one complete (run `tfgen render` again)"
        ) from failed


def _orphans(plan: RenderPlan, prune: bool) -> tuple[list[str], list[str]]:
    """(removed, kept) orphans."""
    removed: list[str] = []
    kept: list[str] = []
    for change in plan.by_action(ORPHAN):
        if not prune:
            kept.append(change.path)
            continue
        path = plan.root / change.path
        # Re-check right before deleting: only ever remove a file that still carries the header.
        try:
            on_disk = read_input(path, change.path, plan.root).decode("utf-8", errors="replace")
        except Refused:
            continue
        if not is_generated(on_disk):
            continue
        try:
            path.unlink()
        except OSError as exc:
            raise TfgenError(f"cannot remove orphan {change.path}: {exc.strerror or exc}") from exc
        removed.append(change.path)
        _remove_empty_parents(path.parent, plan.root / layout.GENERATED_DIR)
    return removed, kept


def _remove_empty_parents(directory: Path, stop: Path) -> None:
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


