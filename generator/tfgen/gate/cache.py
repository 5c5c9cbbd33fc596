"""A content-addressed cache under `.tfgen-cache/` so unchanged experiments cost nothing.

Entries are keyed by a SHA-256 over everything that decides their content, never by time or
name, so a stale entry cannot be hit: a changed input is a different key. `CacheKeys` is the one
place every key is made, each from all of its inputs (tfgen's code and shipped schemas, the
chart, tfgen.yaml, helm's version, the Kubernetes version, ...). Entries live in one SQLite
file, written in one transaction per run, so concurrent and interrupted runs never leave a
half-written entry. Deleting the folder is always safe. The folder is git-ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from ..repo import resources

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
        return None if row is None else str(row[0])

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
        identity = CacheKeys.tool_version(binary, stat.st_size, stat.st_mtime_ns, args)
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


@cache
def tool_digest() -> str:
    """tfgen itself: its version, its code, the schemas it ships, and the versions of the
    validators it runs. A new tfgen must not reuse an old one's verdicts."""
    import jsonschema_rs
    import kubernetes_validate

    package = Path(__file__).resolve().parents[1]
    return digest(
        __version__,
        tree_digest(package),  # symlinked folders (the shipped schemas, chart) are not entered
        tree_digest(resources.schema_dir()),
        getattr(jsonschema_rs, "__version__", ""),
        getattr(kubernetes_validate, "__version__", str(Path(kubernetes_validate.__file__).parent)),
    )


class CacheKeys:
    """Every key of the gate's cache, each a digest of everything its entry depends on.

    `tool` is `tool_digest()`; `cwd` is part of the keys of entries holding problems, because
    problems name files relative to the working directory.
    """

    def __init__(self, tool: str, cwd: str) -> None:
        self.tool = tool
        self.cwd = cwd

    @staticmethod
    def tool_version(binary: str, size: int, mtime_ns: int, args: Sequence[str]) -> str:
        """What a tool says of its version: the same binary file (path, size, mtime)."""
        return digest("tool-version", binary, str(size), str(mtime_ns), *args)

    def run(self, helm_version: str, options: Mapping[str, Any], base_commit: str,
            inputs: str) -> str:
        """A whole `tfgen check` result: every input file (`inputs` digests them), tfgen,
        helm, the options and the base revision."""
        return digest("check", self.tool, self.cwd, helm_version,
                      json.dumps(options, sort_keys=True), base_commit, inputs)

    def spec(self, config: bytes, shown: str, raw: bytes) -> str:
        """One spec file's verdict: its bytes, tfgen.yaml (its defaults and namespaces) and
        tfgen (the schema and the rules)."""
        return digest("spec", self.tool, self.cwd, config, shown, raw)

    def resolution(self, root: Path, files: Sequence[tuple[str, bytes]]) -> str:
        """The Applications the ApplicationSet generates: what resolving them reads."""
        parts: list[bytes | str] = ["resolve", self.tool, str(root)]
        for rel, data in files:
            parts += [rel, data]
        return digest(*parts)

    def render(self, helm_version: str, chart_digest: str, release: str, namespace: str,
               kube_version: str, api_versions: Sequence[str],
               values: Sequence[bytes | str]) -> str:
        """One experiment's rendered manifest: everything its `helm template` reads, and
        tfgen (which splits and normalises helm's output)."""
        return digest("render", self.tool, helm_version, chart_digest, release, namespace,
                      kube_version, ",".join(api_versions), *values)

    def chart_defaults(self, helm_version: str, chart_digest: str) -> str:
        """Whether helm reads a chart's values.yaml as tfgen does: the chart and helm."""
        return digest("chart-defaults", self.tool, helm_version, chart_digest)

    def objects(self, render_key: str, namespace: str, project: str, *, kube_version: str,
                schema_check: bool, projects: str) -> str:
        """The verdict on one experiment's rendered objects: the objects (their render key)
        and what judges them (tfgen's schemas and rules, the Kubernetes version, the
        AppProjects in argo/)."""
        return digest("objects", self.tool, kube_version, str(schema_check), projects,
                      render_key, namespace, project)
