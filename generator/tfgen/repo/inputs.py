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

Listing ten thousand folders costs more than looking at their files, so the table keeps each
folder's listing too, under the folder's own status: adding, removing or renaming an entry
moves a folder's mtime and ctime, so a folder whose status is unchanged (and old enough, by the
same rule) still holds the names listed, and only its files' statuses are looked at. A folder
holding a symbolic link is never remembered: links are looked at the careful way every time.
"""

from __future__ import annotations

import json
import os
import stat
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
    report). Statuses known to `cache` spare listing, reading and hashing (see the module
    docstring).

    Symlinked folders are not entered; one that leads out of the repository is refused, and
    so is a tree where `tfgen render` could not write (`layout.check_generated_tree`).
    """
    taken = time.time_ns()
    layout.check_generated_tree(root)
    cache = cache or Cache(None)
    table_key = CacheKeys.stat_table(str(root.absolute()))
    known = _Table.load(cache.get("stat", table_key))
    # the statuses of the folders not looked at stay in the table for the runs that do
    table = known.without(folders)
    hashes: dict[str, str] = {}
    refused: dict[str, str] = {}
    hashed = 0

    def add(rel: str, path: str, status: os.stat_result | None) -> None:
        """A file whose status is not the known one (or unknown): read and hashed."""
        nonlocal hashed
        data = read_input(path, layout.shown(path), root)  # refuses what it must
        hashed += 1
        hashes[rel] = content_hash(data)
        if status is not None and _settled(status, taken):
            table.files[rel] = _file_ident(status) + hashes[rel]

    for rel in (layout.CONFIG_NAME, layout.CODEOWNERS_FILE):
        # tfgen.yaml, and the one generated file outside argo/ (the rest of .github/ is no
        # input): read alone
        if os.path.lexists(root / rel):
            add(rel, str(root / rel), None)
    for top in folders:
        # below a symlinked folder every file goes the careful way, and no listing is kept
        walk = _Walk(root, known.folders, table.folders, taken,
                     plain=not os.path.islink(root / top))
        for folder, path, files in walk.folders(top):
            for name, status in files:
                rel = f"{folder}/{name}"
                if status is not None:  # a regular file below root, no link on the way
                    # known by its status: the path of nearly every file, kept free of calls
                    ident, entry = _file_ident(status), known.files.get(rel)
                    if entry is not None and entry.startswith(ident):
                        table.files[rel] = entry
                        hashes[rel] = entry[len(ident):]
                        continue
                try:
                    add(rel, f"{path}/{name}", status)
                except Refused as exc:
                    if layout.experiment_of(rel) is None or rel.startswith(layout.ARGO_DIR):
                        raise
                    refused[rel] = exc.reason
    if table != known:
        cache.put("stat", table_key, table.to_json())
    return Inputs(root, hashes, refused, hashed)


def _settled(status: os.stat_result, taken: int) -> bool:
    """Whether a status is old enough to be told apart from the next edit's (racy-git)."""
    return max(status.st_mtime_ns, status.st_ctime_ns) < taken - RACY_NS


# A file in a folder: its name, and its status when it is a regular file reached without a
# link (else None: it is read the careful way).
_File = tuple[str, "os.stat_result | None"]
_Listing = tuple[list[_File], list[str]]  # the files, the names of the folders


@dataclass
class _Table:
    """The statuses a snapshot keeps in the cache: file path -> "size mtime ctime inode
    device hash", folder path -> ["mtime ctime inode device", [name, ...]] (a folder's name
    ends in "/"), each as the walk found it."""

    files: dict[str, str] = field(default_factory=dict)
    folders: dict[str, list] = field(default_factory=dict)

    @classmethod
    def load(cls, text: str | None) -> _Table:
        try:
            data = json.loads(text) if text is not None else None
        except ValueError:
            data = None
        if not (isinstance(data, dict) and isinstance(data.get("files"), dict)
                and isinstance(data.get("folders"), dict)):
            return cls()  # none yet, or written by another version: every file is looked at
        return cls(data["files"], data["folders"])

    def without(self, folders: Sequence[str]) -> _Table:
        """The entries below the input folders other than `folders`."""
        if set(INPUT_DIRS) <= set(folders):
            return _Table()

        def kept(rel: str) -> bool:
            top = rel.partition("/")[0]
            return top in INPUT_DIRS and top not in folders
        return _Table({r: e for r, e in self.files.items() if kept(r)},
                      {r: e for r, e in self.folders.items() if kept(r)})

    def to_json(self) -> str:
        return json.dumps({"files": self.files, "folders": self.folders},
                          separators=(",", ":"))


class _Walk:
    """Every folder below a folder, with its files: a folder's files by name, then its folders
    by name. A symlinked folder is not entered, and refused when it leads out of the
    repository; an unreadable folder is skipped (its files are then no input). A folder whose
    status the `known` listings vouch for is not listed again; the listings found go to
    `found`. Paths are strings: ten thousand experiment folders make pathlib's cost show."""

    def __init__(self, root: Path, known: Mapping[str, list], found: dict[str, list],
                 taken: int, plain: bool) -> None:
        self.root, self.known, self.found = root, known, found
        self.taken, self.plain = taken, plain

    def folders(self, top: str) -> Iterator[tuple[str, str, list[_File]]]:
        """(relative path, path, files) of `top` and of every folder below it."""
        base = str(self.root)
        pending = [top]
        while pending:
            current = pending.pop()
            path = f"{base}/{current}"
            listing = self._remembered(current, path)
            if listing is None:
                listing = self._listed(current, path)
            files, subfolders = listing
            yield current, path, files
            # popped in name order, and each one's own folders before its next sibling
            pending += [f"{current}/{name}" for name in reversed(subfolders)]

    def _remembered(self, current: str, path: str) -> _Listing | None:
        """The folder's listing as kept, when its status vouches for it and every file in it
        is still a regular file."""
        record = self.known.get(current) if self.plain else None
        if record is None:
            return None
        files: list[_File] = []
        subfolders: list[str] = []
        try:
            if _folder_ident(os.lstat(path)) != record[0]:
                return None
            for name in record[1]:
                if name.endswith("/"):
                    subfolders.append(name[:-1])
                    continue
                status = os.lstat(f"{path}/{name}")
                if not stat.S_ISREG(status.st_mode):
                    return None  # replaced while we looked: list the folder
                files.append((name, status))
        except OSError:
            return None  # gone meanwhile: list the folder
        self.found[current] = record
        return files, subfolders

    def _listed(self, current: str, path: str) -> _Listing:
        """The folder's listing now; it is kept when it can be trusted."""
        try:
            status = os.lstat(path)  # before listing: a change while listing moves it
            with os.scandir(path) as listing:
                scanned = sorted(listing, key=_name)
        except OSError:
            return [], []
        files: list[_File] = []
        subfolders: list[str] = []
        names: list[str] = []
        keep = self.plain
        for entry in scanned:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in (".git", "__pycache__"):
                    subfolders.append(entry.name)
                    names.append(entry.name + "/")
            elif entry.is_symlink() and _leads_to_folder(entry):
                resolve_input(entry.path, layout.shown(entry.path), self.root)
                keep = False
            elif _not_input(current, entry.name):
                continue  # not looked at (it may be gone already), and not kept
            else:
                regular = self.plain and entry.is_file(follow_symlinks=False)
                try:
                    looked = entry.stat(follow_symlinks=False) if regular else None
                except FileNotFoundError:
                    keep = False  # gone since it was listed: the folder has changed
                    continue
                keep = keep and regular
                files.append((entry.name, looked))
                names.append(entry.name)
        if keep and _settled(status, self.taken):
            self.found[current] = [_folder_ident(status), names]
        return files, subfolders


def _not_input(folder: str, name: str) -> bool:
    """A file a render is writing (or was, when it was killed), or its lock: never an input,
    and never looked at (a render at work may rename or remove it at any moment)."""
    return layout.is_temp_name(name) or f"{folder}/{name}" == layout.RENDER_LOCK


def _file_ident(status: os.stat_result) -> str:
    return (f"{status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} "
            f"{status.st_ino} {status.st_dev} ")


def _folder_ident(status: os.stat_result) -> str:
    return f"{status.st_mtime_ns} {status.st_ctime_ns} {status.st_ino} {status.st_dev}"


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _leads_to_folder(link: os.DirEntry[str]) -> bool:
    try:
        return link.is_dir()
    except OSError:
        return False  # a loop: read as a file, the safe reader says what it is
