"""What the gate reads: every input file of a run, known by its content hash.

The whole-run cache key, each spec's verdict, the drift of the generated files, the Argo CD
objects in argo/ and the resolved Applications are all computed from this one snapshot, so one
run judges one consistent state of the repository. Files are read as every command reads
input (`repo.files.read_input`): the gate is not the one place where a pipe hangs tfgen.

A warm check must not read ten thousand files to learn that none changed, so the snapshot
keeps, in the gate's (signed) cache, a table of each file's status (type, size, mtime, ctime,
inode, device) and content hash, and reads and hashes only the files whose status differs.
ctime is in it because nobody can set it: an edit that keeps the size and puts the mtime back
still moves it. A file whose status changed within `RACY_NS` of the snapshot is not put in the
table (the racy-git rule): timestamps have a granularity (a second, two on some file systems, a
clock tick on others), so a second edit in the same tick as the first, right after tfgen hashed
it, would leave the status unchanged; such a file is hashed again by every run until its status
is old enough to tell edits apart. Files are read only when a run needs their bytes, and
checked then against the hash the run is keyed by.

Listing ten thousand folders costs more than looking at their files, so the table keeps each
folder's listing too, under the folder's own status: adding, removing or renaming an entry
moves a folder's mtime and ctime, so a folder whose status is unchanged (and old enough, by the
same rule) still holds the names listed, and only its files' statuses are looked at. A folder
holding a symbolic link is never remembered: links are looked at the careful way every time.
The table is kept by folder, each file's status and hash beside its name: a folder whose files
all have their known statuses is taken whole, with no work per file but looking at it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from . import layout
from .cache import Cache
from .files import CHANGED_WHILE_READ, Changed, Refused, read_input, resolve_input
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
            raise Changed(layout.shown(path), CHANGED_WHILE_READ, "run tfgen again")
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
        # path NUL hash, a line each: a path holds no NUL and a hash is 64 hex digits, so the
        # text is read back one way only (and it is joined without a call per file)
        return digest(json.dumps(self.refused), "\n".join(map("\0".join, self.hashes.items())))

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
        return Subset(self.files, {rel for rel in self.hashes
                                   if layout.is_generated_location(rel)})


class Subset(Mapping[str, bytes]):
    """Some of the files of a mapping (a snapshot's), each read when asked for."""

    def __init__(self, files: Mapping[str, bytes], names: set[str]) -> None:
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
    INPUT_DIRS), in a stable order, looked at through the one safe reader's rules (`Refused`
    for a pipe, a device, a link out of the repository, a file over the limit; a spec the
    reader refuses is recorded in `refused` instead, for validate to report). Statuses known
    to `cache` spare listing, reading and hashing (see the module docstring).

    Symlinked folders are not entered; one that leads out of the repository is refused, and
    so is a tree where `tfgen render` could not write (`layout.check_generated_tree`).
    """
    taken = time.time_ns()
    layout.check_generated_tree(root)
    cache = cache or Cache(None)
    table_key = CacheKeys.stat_table(str(root.absolute()))
    known = _load_table(cache.get("stat", table_key))
    looking = _Looking(root, known, taken)
    # the folders not looked at stay in the table for the runs that do
    table = {rel: entry for rel, entry in known.items()
             if rel.partition("/")[0] not in folders}
    for rel in (layout.CONFIG_NAME, layout.CODEOWNERS_FILE):
        # tfgen.yaml, and the one generated file outside argo/ (the rest of .github/ is no
        # input): read alone
        if os.path.lexists(root / rel):
            looking.add(rel, str(root / rel))
    for top in folders:
        # below a symlinked folder every file goes the careful way, and no listing is kept
        walk = _Walk(root, known, taken, plain=not os.path.islink(root / top))
        for listing in walk.folders(top):
            table[listing.rel] = looking.look_at(listing)
    if table != known:
        cache.put("stat", table_key, json.dumps(table, separators=(",", ":")))
    return Inputs(root, looking.hashes, looking.refused, looking.hashed)


class _Looking:
    """One snapshot's look at the files: their hashes, the specs refused, how many were
    read; `known`, the statuses of the last run's (`_Folder` by folder)."""

    def __init__(self, root: Path, known: Mapping[str, _Folder], taken: int) -> None:
        self.root, self.known, self.taken = root, known, taken
        self.hashes: dict[str, str] = {}
        self.refused: dict[str, str] = {}
        self.hashed = 0

    def add(self, rel: str, path: str, looked: os.stat_result | None = None) -> None:
        """A file whose status is not the known one (or unknown): read and hashed; `looked`,
        its status as the walk found it (through no link), when it is a regular file. A spec
        the reader refuses is recorded in `refused`; any other refused file stops the run."""
        try:
            data = read_input(path, rel, self.root, looked=looked)  # refuses what it must
        except Refused as exc:  # named as messages show paths only when it is refused
            if layout.experiment_of(rel) is None or rel.startswith(layout.ARGO_DIR):
                raise type(exc)(layout.shown(path), exc.reason, exc.hint) from None
            self.refused[rel] = exc.reason
            return
        self.hashed += 1
        self.hashes[rel] = content_hash(data)

    def look_at(self, listing: _Listing) -> _Folder:
        """The folder's files hashed, by their known status where it vouches for them; its
        entry for the table."""
        rels = [f"{listing.rel}/{name}" for name in listing.files]
        idents = [file_ident(status) if status is not None else ""
                  for status in listing.statuses]
        before = self.known.get(listing.rel)
        if before is not None and before.vouches_for(listing.files, idents):
            # every file regular, reached without a link and as it was when its status was
            # old enough to keep: the path of nearly every folder, kept free of calls per file
            self.hashes.update(zip(rels, before.hashes, strict=True))
            # the folder's own status and folders as listed now (a recalled listing's are the
            # kept ones: then the entry is kept as it is)
            listed = (listing.status, listing.folders)
            return (before if listed == (before.status, before.folders)
                    else before._replace(status=listing.status, folders=listing.folders))
        was = before.by_name() if before else {}
        kept = [self._file(listing, name, rel, status, was.get(name, ("", "")))
                for name, rel, status in zip(listing.files, rels, listing.statuses,
                                             strict=True)]
        return _Folder(listing.status, listing.folders, listing.files, kept,
                       [self.hashes.get(rel, "") for rel in rels])

    def _file(self, listing: _Listing, name: str, rel: str, status: os.stat_result | None,
              was: tuple[str, str]) -> str:
        """One file of a folder whose listing differs from the known one: its hash, by its
        known status when that vouches for it; the status kept for the next run ("": none)."""
        ident = file_ident(status) if status is not None else ""
        regular = status is not None and stat.S_ISREG(status.st_mode)
        if ident and ident == was[0]:
            self.hashes[rel] = was[1]
        else:
            self.add(rel, f"{listing.path}/{name}", status if regular else None)
        trusted = (regular and rel in self.hashes and status is not None
                   and settled(status, self.taken))
        return ident if trusted else ""


def settled(status: os.stat_result, taken: int) -> bool:
    """Whether a status (`os.stat` at `taken`, in ns) is old enough to be told apart from
    the next edit's (racy-git)."""
    return max(status.st_mtime_ns, status.st_ctime_ns) < taken - RACY_NS


class _Folder(NamedTuple):
    """A folder as the table keeps it (a JSON list): its status ("" when its listing is not
    to be trusted: too recent, or it holds a link), the names of its folders and of its
    files, and each file's status ("" when not to be trusted: too recent, not a regular file,
    or reached through a link) and content hash ("" when it was refused)."""

    status: str
    folders: list[str]
    files: list[str]
    statuses: list[str]
    hashes: list[str]

    def vouches_for(self, files: list[str], idents: list[str]) -> bool:
        """Whether these are the files kept, each with its status kept, all to be trusted."""
        return self.files == files and self.statuses == idents and "" not in idents

    def by_name(self) -> dict[str, tuple[str, str]]:
        """Each file's name -> (its status kept, its content hash)."""
        return dict(zip(self.files, zip(self.statuses, self.hashes, strict=True), strict=True))


class _Listing(NamedTuple):
    """A folder as the walk found it: its path relative to the root and as given, its status
    as `_Folder` keeps it, its folders' and its files' names, and each file's own status (not
    its link's target's; None below a symlinked folder, or for what was listed as no regular
    file: such a file is read the careful way, and its status never trusted)."""

    rel: str
    path: str
    status: str
    folders: list[str]
    files: list[str]
    statuses: Sequence[os.stat_result | None]


def _load_table(text: str | None) -> dict[str, _Folder]:
    """The folders of the stored table (none when there is none yet, or it has another
    shape: then every file is looked at)."""
    try:
        data = json.loads(text) if text is not None else {}
        table = {rel: _Folder(*entry) for rel, entry in data.items()}
    except (ValueError, TypeError, AttributeError):
        return {}
    aligned = all(len(entry.files) == len(entry.statuses) == len(entry.hashes)
                  for entry in table.values())
    return table if aligned else {}


class _Walk:
    """Every folder below a folder, with its files: a folder's files by name, then its folders
    by name. A symlinked folder is not entered, and refused when it leads out of the
    repository; an unreadable folder is skipped (its files are then no input). A folder whose
    status the `known` table vouches for is not listed again. Paths are strings: ten thousand
    experiment folders make pathlib's cost show."""

    def __init__(self, root: Path, known: Mapping[str, _Folder], taken: int, plain: bool) -> None:
        self.root, self.known, self.taken, self.plain = root, known, taken, plain

    def folders(self, top: str) -> Iterator[_Listing]:
        """The listing of `top` and of every folder below it."""
        base = str(self.root)
        pending = [top]
        while pending:
            current = pending.pop()
            path = f"{base}/{current}"
            listing = self._remembered(current, path) or self._listed(current, path)
            yield listing
            # popped in name order, and each one's own folders before its next sibling
            pending += [f"{current}/{name}" for name in reversed(listing.folders)]

    def _remembered(self, current: str, path: str) -> _Listing | None:
        """The folder's listing as kept, when its status vouches for it, with each file's
        status now (`snapshot` trusts only those equal to the ones it kept)."""
        record = self.known.get(current) if self.plain else None
        if record is None or not record.status:
            return None
        try:
            if _folder_ident(os.lstat(path)) != record.status:
                return None
            # a file replaced by a link or a folder meanwhile has another status (its type is
            # in it), and is then not trusted (`snapshot`)
            statuses = [os.lstat(f"{path}/{name}") for name in record.files]
        except OSError:
            return None  # gone meanwhile: list the folder
        return _Listing(current, path, record.status, record.folders, record.files, statuses)

    def _listed(self, current: str, path: str) -> _Listing:
        """The folder's listing now, with its status when it can be trusted."""
        try:
            status = os.lstat(path)  # before listing: a change while listing moves it
            with os.scandir(path) as listing:
                scanned = sorted(listing, key=attrgetter("name"))
        except OSError:
            return _Listing(current, path, "", [], [], [])
        subfolders: list[str] = []
        files: list[str] = []
        statuses: list[os.stat_result | None] = []
        keep = self.plain
        for entry in scanned:
            if entry.is_dir(follow_symlinks=False):
                if not _not_walked(current, entry.name):
                    subfolders.append(entry.name)
            elif _leads_to_folder(entry):
                resolve_input(entry.path, layout.shown(entry.path), self.root)
                keep = False
            elif not _not_input(current, entry.name):  # else not looked at (it may be gone)
                keep = self._list_file(entry, files, statuses) and keep
        trusted = keep and settled(status, self.taken)
        return _Listing(current, path, _folder_ident(status) if trusted else "", subfolders,
                        files, statuses)

    def _list_file(self, entry: os.DirEntry[str], files: list[str],
                   statuses: list[os.stat_result | None]) -> bool:
        """List one input file, with its own status when it is a regular file reached through
        no link; whether the folder's listing may still be kept."""
        regular = self.plain and entry.is_file(follow_symlinks=False)
        try:
            looked = entry.stat(follow_symlinks=False) if regular else None
        except FileNotFoundError:
            return False  # gone since it was listed: the folder has changed
        files.append(entry.name)
        statuses.append(looked)
        return regular


def _not_walked(folder: str, name: str) -> bool:
    """A folder that holds no input: Git's, Python's caches, tfgen's own upstream CRDs."""
    return name in (".git", "__pycache__") or f"{folder}/{name}" == layout.UPSTREAM_SCHEMAS_DIR


def _not_input(folder: str, name: str) -> bool:
    """A file a render is writing (or was, when it was killed), or its lock: never an input,
    and never looked at (a render at work may rename or remove it at any moment)."""
    return layout.is_temp_name(name) or f"{folder}/{name}" == layout.RENDER_LOCK


def file_ident(status: os.stat_result) -> str:
    """What a file's status says of it, to be told apart from any other content: type and
    mode, size, times (the change time no tool sets back), inode and device."""
    return (f"{status.st_mode} {status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} "
            f"{status.st_ino} {status.st_dev}")


def _folder_ident(status: os.stat_result) -> str:
    return f"{status.st_mtime_ns} {status.st_ctime_ns} {status.st_ino} {status.st_dev}"


def _leads_to_folder(link: os.DirEntry[str]) -> bool:
    """Whether the entry is a symbolic link to a folder."""
    if not link.is_symlink():
        return False
    try:
        return link.is_dir()
    except OSError:
        return False  # a loop: read as a file, the safe reader says what it is
