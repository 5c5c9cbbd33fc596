"""A content-addressed cache under `.tfgen-cache/` so unchanged experiments cost nothing.

Entries are keyed by a SHA-256 over everything that decides their content (chart files, values,
helm version, Kubernetes version, tfgen's own code, ...), never by time or name, so a stale entry
cannot be hit: a changed input is a different key. Entries live in one SQLite file, written in
one transaction per run, so concurrent and interrupted runs never leave a half-written entry.
Deleting the folder is always safe. The folder is git-ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CACHE_DIRNAME = ".tfgen-cache"
# Bump when the meaning of cached content changes (a new check, a different layout).
FORMAT = "1"


def digest(*parts: bytes | str) -> str:
    """SHA-256 hex of the parts, each length-prefixed so ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def tree_digest(root: Path, ignore: Iterable[str] = (".git", "__pycache__")) -> str:
    """Digest of every file (relative path + bytes) under a folder, in a stable order."""
    skip = set(ignore)
    parts: list[bytes | str] = []
    if not root.exists():
        return digest("absent")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            parts.append(path.relative_to(root).as_posix())
            parts.append(path.read_bytes())
    return digest(*parts)


class Cache:
    """Key -> text store in one SQLite file; a `Cache(None)` stores nothing (`--no-cache`).

    One database file instead of one file per entry: creating thousands of small files costs
    more than rendering on some file systems, and SQLite gives atomic, concurrent-safe writes
    (WAL) for free. Writes are batched in memory and committed by `flush()` (also on close).
    """

    def __init__(self, root: Path | None) -> None:
        self.path = root / f"cache-v{FORMAT}.sqlite3" if root is not None else None
        self.hits = 0
        self.misses = 0
        self._db: sqlite3.Connection | None = None
        self._pending: dict[tuple[str, str], str] = {}
        self._broken = False

    @property
    def enabled(self) -> bool:
        return self.path is not None and not self._broken

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and self.enabled:
            assert self.path is not None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("CREATE TABLE IF NOT EXISTS entry (space TEXT, key TEXT, value TEXT,"
                           " PRIMARY KEY (space, key)) WITHOUT ROWID")
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
            row = db.execute("SELECT value FROM entry WHERE space=? AND key=?",
                             (space, key)).fetchone()
        except sqlite3.Error:
            row = None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
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
                    rows = db.execute(f"SELECT key, value FROM entry WHERE space=? AND key IN "
                                      f"({marks})", (space, *chunk)).fetchall()
                except sqlite3.Error:
                    rows = []
                found.update({str(k): str(v) for k, v in rows})
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        return found

    def put(self, space: str, key: str, text: str) -> None:
        if self.enabled:
            self._pending[(space, key)] = text

    def flush(self) -> None:
        """Write pending entries in one transaction."""
        db = self._connect()
        if db is None or not self._pending:
            self._pending.clear()
            return
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO entry VALUES (?, ?, ?)",
                               [(s, k, v) for (s, k), v in self._pending.items()])
        except sqlite3.Error:
            self._broken = True
        self._pending.clear()

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


def tool_version(cache: Cache, binary: str, args: list[str]) -> str:
    """Output of `<binary> <args>` (e.g. `helm version --short`), remembered per binary file
    identity (path, size, mtime): asking helm costs tens of milliseconds on every run."""
    try:
        stat = os.stat(binary)
        identity = digest(binary, str(stat.st_size), str(stat.st_mtime_ns), *args)
    except OSError:
        identity = ""
    if identity:
        known = cache.get("tool-version", identity)
        if known is not None:
            return known
    result = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
    version = result.stdout.strip() or result.stderr.strip()
    if identity and result.returncode == 0:
        cache.put("tool-version", identity, version)
        cache.flush()
    return version
