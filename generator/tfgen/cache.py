"""A content-addressed cache under `.tfgen-cache/` so unchanged experiments cost nothing.

Entries are keyed by a SHA-256 over everything that decides their content (chart files, values,
helm version, Kubernetes version, ...), never by time or name, so a stale entry cannot be hit: a
changed input is a different key. Writes go to a temporary file and are renamed into place, so
concurrent runs and interrupted runs never leave a half-written entry. Deleting the folder is
always safe. The folder is git-ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
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
    """Key -> text store in one folder; a `Cache(None)` stores nothing (for `--no-cache`)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root / FORMAT if root is not None else None
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def _path(self, space: str, key: str) -> Path:
        assert self.root is not None
        return self.root / space / key[:2] / key

    def get(self, space: str, key: str) -> str | None:
        if self.root is None:
            return None
        try:
            text = self._path(space, key).read_text(encoding="utf-8")
        except OSError:
            self.misses += 1
            return None
        self.hits += 1
        return text

    def put(self, space: str, key: str, text: str) -> None:
        if self.root is None:
            return
        path = self._path(space, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except OSError:
            # A read-only checkout still checks correctly, only slower.
            return

    def get_json(self, space: str, key: str) -> Any:
        text = self.get(space, key)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    def put_json(self, space: str, key: str, value: Any) -> None:
        self.put(space, key, json.dumps(value, separators=(",", ":")))


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
    return version
