"""A content-addressed cache under `.tfgen-cache/` so unchanged experiments cost nothing.

Entries are keyed by content (`repo.keys`: a changed input is a different key, so a stale
entry cannot be hit). They live in one SQLite file, written in transactions of up to a
thousand entries, so concurrent and interrupted runs never leave a half-written entry.
Deleting the folder is always safe. The folder is git-ignored, by the repository's .gitignore
and by one of its own. A cache another tfgen filled (another version, or other code) is
emptied when this one opens it: no key of this tfgen can hit its entries.

The cache is a local speed-up, never evidence: whoever can push can also write a cache file
that says "no problems". So every entry carries a MAC (keyed BLAKE2b) made with a key that
never leaves this machine (`$TFGEN_CACHE_KEY_FILE`, else `$XDG_CACHE_HOME/tfgen/key` or
`~/.cache/tfgen/key`, created mode 0600, refused inside the repository): a copied, committed
or edited entry is a miss, and is written again. A cache folder tracked by Git is not read or
written at all, and `tfgen check` reports it (`tracked_problem`); nor is one that is a symlink
or holds anything but regular files.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..problems import Problem
from ..words import counted
from .keys import tool_digest

CACHE_DIRNAME = ".tfgen-cache"
# Bump when the meaning of cached content changes (a new check, a different layout, MAC).
FORMAT = "5"
_DATABASES = "cache-v{}.sqlite3"  # the name of a format's database file, in the cache folder
DATABASE = _DATABASES.format(FORMAT)  # this one's
KEY_ENV = "TFGEN_CACHE_KEY_FILE"
KEY_BYTES = 32
FLUSH_EVERY = 1000  # pending entries written at once
WHAT_IT_IS = "# tfgen's local cache, signed with a key of this machine: never commit it"


def key_path() -> Path:
    """Where this machine's cache key lives (see the module docstring)."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tfgen" / "key"


def machine_key(repository: Path, _retry: bool = True) -> bytes | None:
    """This machine's cache key, created on first use; None when there is none to be had
    (then nothing is cached). A key inside the repository could be committed with the cache,
    so it is never used."""
    path = key_path().absolute()
    repo = repository.resolve()
    if path.resolve() == repo or repo in path.resolve().parents:
        return None
    try:
        # a regular file of a key's size only: never a FIFO, a device or a huge file
        with open(path, "rb", opener=_open_nonblocking) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            data = handle.read(KEY_BYTES * 4)
    except FileNotFoundError:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another run made it first: use theirs (a dangling link: none)
            return machine_key(repository, _retry=False) if _retry else None
        except OSError:
            return None
        data = secrets.token_hex(KEY_BYTES).encode()
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError:
        return None
    return data if len(data) >= KEY_BYTES else None


def _mac_key(secret: bytes) -> bytes:
    """The MAC's key, made from the machine's: a key file may hold up to KEY_BYTES * 4 bytes,
    and keyed BLAKE2b takes at most 64."""
    return hashlib.blake2b(secret, digest_size=64).digest()


def _open_nonblocking(path: str, flags: int) -> int:
    # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
    return os.open(path, flags | os.O_NONBLOCK)


def _usable_folder(folder: Path) -> bool:
    """The cache folder may be used: a real folder inside its repository (no symlink that
    would make tfgen write elsewhere) holding only regular files (SQLite would follow a
    symlinked database or journal, and block on a FIFO)."""
    try:
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return False
        if folder.parent.resolve() != folder.resolve().parent:
            return False
        return all(entry.is_file(follow_symlinks=False)
                   for entry in os.scandir(folder)) if folder.exists() else True
    except OSError:
        return False


def _drop_other_formats(database: Path) -> None:
    """Delete the files of another FORMAT's cache: no version of tfgen reads them again (a
    run of that version still at work keeps its open file)."""
    for path in database.parent.glob(_DATABASES.format("*") + "*"):  # journals included
        if not path.name.startswith(database.name):
            path.unlink(missing_ok=True)


def _forget_other_tfgens(db: sqlite3.Connection) -> None:
    """Empty a cache that another tfgen filled. Its entries are keyed by that tfgen's code, so
    this one never reads them; kept, each upgrade would add a repository's worth of entries
    (hundreds of MB at ten thousand experiments) for good. Two versions of tfgen taking turns
    on one repository empty it for each other: each run is then a cold one."""
    tool = tool_digest()
    with db:
        db.execute("CREATE TABLE IF NOT EXISTS filled_by (tool TEXT)")
        if db.execute("SELECT tool FROM filled_by").fetchall() == [(tool,)]:
            return
        db.execute("DELETE FROM entry")
        db.execute("DELETE FROM filled_by")
        db.execute("INSERT INTO filled_by VALUES (?)", (tool,))
    db.executescript("PRAGMA incremental_vacuum;")  # run to its end (execute frees one page)


def _ignore_itself(folder: Path) -> None:
    """A `.gitignore` of `*` in the cache folder, so `git add -A` leaves the cache out even
    in a repository whose own .gitignore does not name it (render and check both make it)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(folder / ".gitignore", flags, 0o644)
    except OSError:
        return  # there already (or not writable: then nothing else is either)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(f"{WHAT_IT_IS}\n*\n")


def tracked_entries(folder: Path) -> list[str]:
    """The files under the cache `folder` that Git tracks (none outside a Git work tree)."""
    git = shutil.which("git")
    if git is None or not folder.is_dir():
        return []
    result = subprocess.run([git, "-C", str(folder), "ls-files", "-z", "--full-name", "--", "."],
                            capture_output=True, text=True, check=False)
    return [p for p in result.stdout.split("\0") if p] if result.returncode == 0 else []


def tracked_problem(repository: Path) -> Problem | None:
    """A problem when the cache folder is committed: tfgen ignores it, and says so."""
    tracked = tracked_entries(repository / CACHE_DIRNAME)
    if not tracked:
        return None
    return Problem(f"{CACHE_DIRNAME}/", message=(
        f"the cache is committed ({counted(len(tracked), 'file')} tracked by Git, e.g. "
        f"{tracked[0]}); "
        "tfgen never reads a committed cache: anyone who can push could write its verdicts"),
        hint=f"git rm -r --cached {CACHE_DIRNAME} and commit; it is in .gitignore")


MACHINE_DIRNAME = "programs"  # beside the key: what this machine's programs are


def machine_cache(repository: Path) -> Cache:
    """What tfgen remembers of this machine's programs (a helm build's content hash and the
    shortcuts it takes), signed as a repository's cache is and kept beside the key, so that
    every repository and test folder on the machine asks once. A key that cannot be had for
    `repository` (the one being checked: never a key inside it) remembers nothing."""
    secret = machine_key(repository)
    folder = key_path().absolute().parent / MACHINE_DIRNAME
    return Cache(folder if secret is not None else None, secret)


class Cache:
    """Key -> text store in one SQLite file; a `Cache(None)` stores nothing (`--no-cache`).

    One database file instead of one file per entry: creating thousands of small files costs
    more than rendering on some file systems, and SQLite gives atomic, concurrent-safe writes
    (WAL) for free. Writes are batched in memory and committed by `flush()` (also on close).
    Each stored value carries its MAC under the machine key; a value whose MAC does not
    match is a miss.
    """

    def __init__(self, root: Path | None, key: bytes | None = None) -> None:
        self.path = root / DATABASE if root is not None else None
        self._key = _mac_key(key) if key is not None else None
        self._db: sqlite3.Connection | None = None
        self._pending: dict[tuple[str, str], str] = {}
        self._broken = False

    def _mac(self, space: str, key: str, value: str) -> str:
        # BLAKE2b in its keyed mode is a MAC in one pass: a third of HMAC-SHA256's time on
        # the short entries a check verifies by the ten thousand.
        assert self._key is not None
        mac = hashlib.blake2b(key=self._key, digest_size=32)
        for part in (space, key, value):
            data = part.encode()
            mac.update(len(data).to_bytes(8, "big"))
            mac.update(data)
        return mac.hexdigest()

    def _verified(self, space: str, key: str, value: str, mac: str) -> bool:
        return hmac.compare_digest(self._mac(space, key, value), mac)

    @property
    def enabled(self) -> bool:
        return self.path is not None and not self._broken

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and self.enabled:
            assert self.path is not None
            if self._key is None:
                secret = machine_key(self.path.parent.parent)
                self._key = _mac_key(secret) if secret is not None else None
            if (self._key is None or not _usable_folder(self.path.parent)
                    or tracked_entries(self.path.parent)):
                self._broken = True  # no key, an odd folder, a committed cache: never used
                return None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _ignore_itself(self.path.parent)
                _drop_other_formats(self.path)
                db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                # Both set before the first table, the page size first (after auto_vacuum it
                # stays 4 KiB). A rendered manifest (some 16 KB) fills one or two 16 KiB pages
                # instead of four or five, which SQLite writes (to its log, then the file) for
                # less CPU; reading the small entries costs the same. Freed pages are given
                # back to the file system.
                db.execute("PRAGMA page_size=16384")
                db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                # A rowid table: its key index holds the keys alone. (WITHOUT ROWID kept the
                # values in the key's B-tree, and a lookup that passed a megabytes-long entry
                # on its way read all of it: at ten thousand experiments, 0.4 s per 10,000
                # lookups next to the snapshot's table.)
                db.execute("CREATE TABLE IF NOT EXISTS entry (space TEXT, key TEXT, value TEXT,"
                           " mac TEXT, PRIMARY KEY (space, key))")
                _forget_other_tfgens(db)
                self._db = db
            except (OSError, sqlite3.Error):
                # A read-only or broken cache folder: check still works, only slower.
                self._broken = True
        return self._db

    def get(self, space: str, key: str) -> str | None:
        if (space, key) in self._pending:
            return self._pending[(space, key)]
        db = self._connect()
        if db is None:
            return None
        try:
            row = db.execute("SELECT value, mac FROM entry WHERE space=? AND key=?",
                             (space, key)).fetchone()
        except sqlite3.Error:
            row = None
        if row is None or not self._verified(space, key, str(row[0]), str(row[1])):
            return None
        return str(row[0])

    def get_many(self, space: str, keys: Iterable[str]) -> dict[str, str]:
        """Entries for many keys in one query (missing keys are absent from the result)."""
        wanted = list(dict.fromkeys(keys))
        found = {k: self._pending[(space, k)] for k in wanted if (space, k) in self._pending}
        db = self._connect()
        if db is not None:
            rest = [k for k in wanted if k not in found]
            for start in range(0, len(rest), 500):
                chunk = rest[start:start + 500]
                marks = ",".join("?" * len(chunk))
                try:
                    rows = db.execute(f"SELECT key, value, mac FROM entry WHERE space=? AND key"
                                      f" IN ({marks})", (space, *chunk)).fetchall()
                except sqlite3.Error:
                    rows = []
                found.update({str(k): str(v) for k, v, mac in rows
                              if self._verified(space, str(k), str(v), str(mac))})
        return found

    def put(self, space: str, key: str, text: str) -> None:
        if self.enabled:
            self._pending[(space, key)] = text
            if len(self._pending) >= FLUSH_EVERY:
                self.flush()  # a large repository's entries are not all held until the end

    def flush(self) -> None:
        """Write pending entries in one transaction (threads may put meanwhile: the
        connection is serialised, and the pending entries are taken over first)."""
        pending, self._pending = self._pending, {}
        db = self._connect()
        if db is None or not pending:
            return
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO entry VALUES (?, ?, ?, ?)",
                               [(s, k, v, self._mac(s, k, v)) for (s, k), v in pending.items()])
        except sqlite3.Error:
            self._broken = True

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None

    def get_json(self, space: str, key: str) -> Any:
        text = self.get(space, key)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    def put_json(self, space: str, key: str, value: Any) -> None:
        self.put(space, key, json.dumps(value, separators=(",", ":"), default=str))

