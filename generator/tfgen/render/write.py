"""Writing a render plan: every file complete or not at all, and only files tfgen made.

New and changed files are written through a temporary file in the same directory, fsynced, and
moved into place with `os.replace`, so a reader sees the old file or the new one, never half of
one; unchanged files are untouched (their mtime kept); orphans are deleted only on request, and
only while they still carry tfgen's header.
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from ..errors import TfgenError
from ..repo import layout
from .generated import is_generated
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


def _stage(target: Path, content: str, temps: dict[Path, Path]) -> None:
    """Write `content` to a new temporary file next to `target` and fsync it."""
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tfgen-tmp")
    temps[target] = Path(temp)  # recorded first, so it is removed whatever happens next
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _stage_all(
    jobs: list[tuple[str, Path, str]], temps: dict[Path, Path]
) -> tuple[str, OSError] | None:
    """Stage every (path, target, content) in parallel; the first failure in plan order."""
    if not jobs:
        return None
    pool = ThreadPoolExecutor(max_workers=min(WRITERS, len(jobs)))
    interrupted = True  # by Ctrl-C, say: then the jobs not yet started are dropped
    try:
        futures = [pool.submit(_stage, target, content, temps) for _, target, content in jobs]
        wait(futures)
        interrupted = False
    finally:
        pool.shutdown(wait=True, cancel_futures=interrupted)
    for (rel, _, _), future in zip(jobs, futures, strict=True):
        error = None if future.cancelled() else future.exception()
        if isinstance(error, OSError):
            return rel, error
        if error is not None:
            raise error
    return None


def apply_plan(plan: RenderPlan, *, prune: bool = False) -> ApplyResult:
    """Write the plan: creates and updates atomically, orphans removed only with `prune`.

    All new contents are staged (written and fsynced next to their targets) before the first
    rename, so a failure while writing leaves every target untouched; a failure between
    renames leaves each file either wholly old or wholly new.
    """
    to_write = [c for c in plan.changes if c.action in (CREATE, UPDATE)]
    jobs = [(c.path, plan.root / c.path, c.new or "") for c in to_write]
    temps: dict[Path, Path] = {}
    written: list[str] = []
    folders: dict[Path, str] = {}  # each target folder, with the first path written into it
    current = ""
    try:
        for rel, target, _ in jobs:
            if target.parent not in folders:
                current = rel
                target.parent.mkdir(parents=True, exist_ok=True)
                folders[target.parent] = rel
        failed = _stage_all(jobs, temps)
        if failed:
            current = failed[0]
            raise failed[1]
        for rel, target, _ in jobs:
            current = rel
            os.replace(temps[target], target)
            written.append(rel)
        with ThreadPoolExecutor(max_workers=WRITERS) as pool:
            list(pool.map(_fsync_dir, sorted(folders)))
    except OSError as exc:
        raise TfgenError(
            f"cannot write {current}: {exc.strerror or exc}; {len(written)} of "
            f"{len(to_write)} files written, each one complete (run `tfgen render` again)"
        ) from exc
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
    removed: list[str] = []
    kept: list[str] = []
    for change in plan.by_action(ORPHAN):
        if not prune:
            kept.append(change.path)
            continue
        path = plan.root / change.path
        # Re-check right before deleting: only ever remove a file that still carries the header.
        try:
            on_disk = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        if not is_generated(on_disk):
            continue
        try:
            path.unlink()
        except OSError as exc:
            raise TfgenError(f"cannot remove orphan {change.path}: {exc.strerror or exc}") from exc
        removed.append(change.path)
        _remove_empty_parents(path.parent, plan.root / layout.GENERATED_DIR)
    return ApplyResult(written=written, removed=removed, kept_orphans=kept)


def _remove_empty_parents(directory: Path, stop: Path) -> None:
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


