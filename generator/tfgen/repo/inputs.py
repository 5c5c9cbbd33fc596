"""What the gate reads: every input file of a run, known by its content hash.

The whole-run cache key, each spec's verdict, the drift of the generated files, the Argo CD
objects in argo/ and the resolved Applications are all computed from this one snapshot, so one
run judges one consistent state of the repository. Files are read as every command reads
input (`repo.files.read_input`): the gate is not the one place where a pipe hangs tfgen.

A warm check must not read ten thousand files to learn that none changed, so the snapshot
keeps, in the gate's (signed) cache, a table of each file's status (size, mtime, ctime, inode,
device) and content hash, and reads and hashes only the files whose status differs. ctime is
in it because nobody can set it: an edit that keeps the size and puts the mtime back still
moves it. A file whose status changed within `RACY_NS` of the snapshot is not put in the table
(the racy-git rule): timestamps have a granularity (a second, two on some file systems, a clock
tick on others), so a second edit in the same tick as the first, right after tfgen hashed it,
would leave the status unchanged; such a file is hashed again by every run until its status is
old enough to tell edits apart. Files are read only when a run needs their bytes, and checked
then against the hash the run is keyed by.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from . import layout
from .cache import Cache
from .files import Refused, read_input, resolve_input
from .keys import CacheKeys, content_hash, digest

# Folders whose files a check reads (tfgen.yaml too); schemas/ is read by tfgen as package
# data, and in this repository a change to it is a change of tfgen.
INPUT_DIRS = (layout.EXPERIMENTS_DIR, layout.ARGO_DIR, "charts", "schemas")
# Statuses this recent are not trusted by the next run (see the module docstring).
RACY_NS = 2_000_000_000

class Files(Mapping[str, bytes]):
    """Repository-relative POSIX path -> bytes, read when asked (through the safe reader) and
    refused when they are no longer the bytes the run hashed."""

    def __init__(self, root: Path, hashes: Mapping[str, str]) -> None:
        self.root, self.hashes = root, hashes

    def __getitem__(self, rel: str) -> bytes:
        expected = self.hashes[rel]
        path = self.root / rel
        data = read_input(path, layout.shown(path), self.root)
        if content_hash(data) != expected:
            raise Refused(layout.shown(path), "changed while tfgen was reading it",
                          "run tfgen again")
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self.hashes)

    def __len__(self) -> int:
        return len(self.hashes)


@dataclass(frozen=True)
class Inputs:
    """Every input file by its content hash (`files` gives the bytes); `refused`: the files in
    experiments/ the safe reader refused, path -> why (the validate stage reports each one as a
    problem of that file, in the run's format, as `tfgen validate` does); `hashed`: how many
    files this snapshot read and hashed (the others' status was known)."""

    root: Path
    hashes: dict[str, str]
    refused: dict[str, str] = field(default_factory=dict)
    hashed: int = 0

    @cached_property
    def files(self) -> Files:
        return Files(self.root, self.hashes)

    @cached_property
    def digest(self) -> str:
        return digest(json.dumps([self.hashes, self.refused]))

    @cached_property
    def config(self) -> bytes:
        return self.files[layout.CONFIG_NAME] if layout.CONFIG_NAME in self.hashes else b""

    @cached_property
    def _tops(self) -> tuple[str, ...]:
        # the root as given and its real path, each as the prefix of the paths below it
        return tuple(dict.fromkeys(str(top).rstrip(os.sep) + os.sep
                                   for top in (self.root.absolute(), self.root.resolve())))

    def hash_of(self, path: Path) -> str | None:
        """The content hash of a file given by its absolute path below the root (or its real
        path), when it is an input."""
        text = str(path)
        for top in self._tops:
            if text.startswith(top):
                return self.hashes.get(text[len(top):].replace(os.sep, "/"))
        return None

    def generated(self) -> Mapping[str, bytes]:
        """The files where tfgen writes, as `layout.generated_files` reads them from disk
        (each read when asked for)."""
        return _Subset(self.files, {rel for rel in self.hashes
                                    if layout.is_generated_location(rel)})


class _Subset(Mapping[str, bytes]):
    """Some of a snapshot's files, read when asked for."""

    def __init__(self, files: Files, names: set[str]) -> None:
        self.files, self.names = files, names

    def __getitem__(self, rel: str) -> bytes:
        if rel not in self.names:
            raise KeyError(rel)
        return self.files[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.names))

    def __len__(self) -> int:
        return len(self.names)


def snapshot(
    root: Path, cache: Cache | None = None, folders: Sequence[str] = INPUT_DIRS
) -> Inputs:
    """Every input file under `root` (tfgen.yaml, CODEOWNERS and the `folders` of
    INPUT_DIRS), in a stable order, looked at through the one safe
    reader's rules (`Refused` for a pipe, a device, a link out of the repository, a file over
    the limit; a spec the reader refuses is recorded in `refused` instead, for validate to
    report). Statuses known to `cache` spare reading and hashing (see the module docstring).

    Symlinked folders are not entered; one that leads out of the repository is refused, and
    so is a tree where `tfgen render` could not write (`layout.check_generated_tree`).
    """
    taken = time.time_ns()
    layout.check_generated_tree(root)
    cache = cache or Cache(None)
    table_key = CacheKeys.stat_table(str(root.absolute()))
    known = _load_table(cache.get("stat", table_key))
    # the statuses of the folders not looked at stay in the table for the runs that do
    table = {rel: entry for rel, entry in known.items()
             if rel.partition("/")[0] in INPUT_DIRS and rel.partition("/")[0] not in folders}
    hashes: dict[str, str] = {}
    refused: dict[str, str] = {}
    hashed = 0

    def add(rel: str, path: str, status: os.stat_result | None) -> None:
        nonlocal hashed
        ident = ""
        if status is not None:  # a regular file below root, no link on the way
            ident = (f"{status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} "
                     f"{status.st_ino} {status.st_dev} ")
            entry = known.get(rel)
            if entry is not None and entry.startswith(ident):
                table[rel], hashes[rel] = entry, entry[len(ident):]
                return
        data = read_input(path, layout.shown(path), root)  # refuses what it must
        hashed += 1
        hashes[rel] = content_hash(data)
        if status is not None and max(status.st_mtime_ns, status.st_ctime_ns) < taken - RACY_NS:
            table[rel] = ident + hashes[rel]

    for rel in (layout.CONFIG_NAME, layout.CODEOWNERS_FILE):
        # tfgen.yaml, and the one generated file outside argo/ (the rest of .github/ is no
        # input): read alone
        if os.path.lexists(root / rel):
            add(rel, str(root / rel), None)
    for top in folders:
        linked = os.path.islink(root / top)  # then every file there goes the careful way
        for rel, entry in _walk(root, top):
            if layout.is_temp_name(entry.name) or rel == layout.RENDER_LOCK:
                continue  # a render at work (or killed): not an input
            try:
                plain = not linked and entry.is_file(follow_symlinks=False)
                add(rel, entry.path, entry.stat(follow_symlinks=False) if plain else None)
            except Refused as exc:
                if layout.experiment_of(rel) is None or rel.startswith(layout.ARGO_DIR):
                    raise
                refused[rel] = exc.reason
    if table != known:
        cache.put("stat", table_key, json.dumps(table, separators=(",", ":")))
    return Inputs(root, hashes, refused, hashed)


def _walk(root: Path, rel_dir: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative path, entry) of every file below `rel_dir`: a folder's files by name, then its
    folders by name. A symlinked folder is not entered, and refused when it leads out of the
    repository; an unreadable folder is skipped (its files are then no input). Paths are
    strings: ten thousand experiment folders make pathlib's cost show."""
    top = str(root)
    pending = [rel_dir]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(os.path.join(top, current)) as listing:
                entries = sorted(listing, key=_name)
        except OSError:
            continue
        folders = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in (".git", "__pycache__"):
                    folders.append(f"{current}/{entry.name}")
            elif entry.is_symlink() and _leads_to_folder(entry):
                resolve_input(entry.path, layout.shown(entry.path), root)
            else:
                yield f"{current}/{entry.name}", entry
        # popped in name order, and each one's own folders before its next sibling
        pending += reversed(folders)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _leads_to_folder(link: os.DirEntry[str]) -> bool:
    try:
        return link.is_dir()
    except OSError:
        return False  # a loop: read as a file, the safe reader says what it is


def _load_table(text: str | None) -> dict[str, str]:
    if text is None:
        return {}
    try:
        table = json.loads(text)
    except ValueError:
        return {}
    return table if isinstance(table, dict) else {}
