"""A loaded YAML document and where each of its values came from.

Every problem names `file:line:col`: a JSON pointer into the data maps back to the position of
its node. Values merged in from tfgen.yaml `defaults` have no position in the spec; `Locator`
reports them at their line in tfgen.yaml, where the fix belongs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...problems import Problem

Key = str | int
PointerParts = tuple[Key, ...]
Positions = dict[PointerParts, tuple[int, int]]


def pointer_text(parts: PointerParts) -> str:
    """`("spec", "roles", "worker", "gpus")` -> `$.spec.roles.worker.gpus`; `[0]` for items."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "a").replace("-", "a").isalnum() and not part[:1].isdigit():
            out += f".{part}"
        else:
            out += "[" + '"' + part.replace('"', '\\"') + '"]'
    return out


class Document:
    """Loaded data plus the position of every node, keyed by the tuple path to it.

    Positions are needed only to report a problem, and most documents have none: a document
    loaded by the fast path records them on first use (`positions`: a second parse, node by
    node), so a valid spec is parsed once, without them.
    """

    def __init__(
        self,
        path: str,
        data: dict[str, Any],
        values: Positions | None = None,
        keys: Positions | None = None,
        *,
        positions: Callable[[], tuple[Positions, Positions]] | None = None,
    ) -> None:
        self.path = path
        self.data = data
        self._values = values
        self._keys = keys
        self._positions = positions  # (values, keys) recorded on first use

    def __repr__(self) -> str:
        return f"Document(path={self.path!r})"

    @property
    def values(self) -> Positions:
        """Line and column (1-based) of every value: mapping values, list items, the root."""
        if self._values is None:
            self._record_positions()
        assert self._values is not None
        return self._values

    @property
    def keys(self) -> Positions:
        """Line and column (1-based) of every mapping key, by the pointer to its value."""
        if self._keys is None:
            self._record_positions()
        assert self._keys is not None
        return self._keys

    def _record_positions(self) -> None:
        self._values, self._keys = self._positions() if self._positions else ({}, {})

    def locate(self, parts: PointerParts, *, key: bool = False) -> tuple[int, int]:
        """Line and column for a pointer; the nearest existing ancestor when it does not exist.

        `key=True` prefers the position of the mapping key (`gpus:`) over its value, which
        reads better for "unknown key" and for problems about a whole block.
        """
        wanted = tuple(parts)
        parts = wanted
        values = self.values
        while parts not in values and parts:
            parts = parts[:-1]
        if parts not in values:
            return (1, 1)
        if parts == wanted and not key:
            return values[parts]
        return self.keys.get(parts, values[parts])


@dataclass
class Locator:
    """Where a value of a merged spec came from: the spec file, else tfgen.yaml `defaults`.

    Values merged in from the repository config have no position in the spec; a problem with
    them is reported at their line in tfgen.yaml, where the fix belongs.
    """

    document: Document
    config: Document | None = None
    # Keys the spec misspelt, judged as the keys meant: (pointer as meant, as written), so a
    # problem under the key meant is said at the key written.
    renamed: tuple[tuple[PointerParts, PointerParts], ...] = ()

    def where(
        self, parts: PointerParts, *, key: bool = False, missing: bool = False
    ) -> tuple[str, int, int, bool]:
        """(path, line, col, from_config) for a pointer into the merged spec.

        `missing=True` is for problems about something absent (a required key, one of several
        alternatives): the spec should add it, so they always point into the spec.
        """
        parts = tuple(parts)
        for meant, written in self.renamed:
            if parts[:len(meant)] == meant:
                parts = (*written, *parts[len(meant):])
        if missing or parts in self.document.values or not self.config:
            return (self.document.path, *self.document.locate(parts, key=key), False)
        in_config = ("defaults", *parts)
        if in_config in self.config.values:
            return (self.config.path, *self.config.locate(in_config, key=key), True)
        return (self.document.path, *self.document.locate(parts, key=key), False)

    def problem(
        self, parts: PointerParts, message: str, hint: str = "", *, key: bool = False,
        missing: bool = False,
    ) -> Problem:
        """A problem at a pointer into the merged spec, in the file where the fix belongs."""
        path, line, col, from_config = self.where(parts, key=key, missing=missing)
        if from_config:
            hint = "; ".join(x for x in (hint, "this value comes from tfgen.yaml defaults") if x)
        return Problem(path, line, col, pointer_text(parts), message, hint)


