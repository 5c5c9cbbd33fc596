"""Strict YAML loading that remembers where every value came from.

A spec is read as bytes, checked for the mistakes that make YAML confusing (not UTF-8, binary,
tabs in indentation, empty, several documents, a top level that is not a mapping, too large),
composed into YAML nodes and then turned into plain Python data by our own walk over the nodes.
The walk records the line and column of every mapping key, mapping value and sequence item, so
any JSON pointer into the data can be mapped back to `file:line:col`; it also refuses duplicate
keys and bounds alias expansion (a "billion laughs" file stops after a fixed number of nodes,
with bounded memory, because aliases are expanded lazily by us and counted). Every failure is a
`LoadError` (an `InputError`) carrying the location, never a traceback.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
import yaml.constructor
import yaml.resolver
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..errors import InputError

MAX_BYTES = 1024 * 1024
MAX_NODES = 10_000  # values after alias expansion; a real spec has a few hundred
MAX_DEPTH = 64

Key = str | int
PointerParts = tuple[Key, ...]

_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LoadError(InputError):
    """A file that cannot be loaded as one YAML mapping; `line`/`col` are 1-based (0 unknown)."""

    def __init__(self, path: str, reason: str, line: int = 0, col: int = 0, hint: str = "") -> None:
        where = f"{path}:{line}:{col or 1}" if line else path
        text = f"{where}: {reason}" + (f" ({hint})" if hint else "")
        super().__init__(text)
        self.path = path
        self.reason = reason
        self.line = line
        self.col = col
        self.hint = hint


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
    loaded from text keeps the text and records the positions on first use (a second parse,
    node by node), so a valid spec is parsed once, without them.
    """

    def __init__(
        self,
        path: str,
        data: dict[str, Any],
        values: dict[PointerParts, tuple[int, int]] | None = None,
        keys: dict[PointerParts, tuple[int, int]] | None = None,
        *,
        text: str | None = None,
    ) -> None:
        self.path = path
        self.data = data
        self._values = values
        self._keys = keys
        self._text = text

    def __repr__(self) -> str:
        return f"Document(path={self.path!r})"

    @property
    def values(self) -> dict[PointerParts, tuple[int, int]]:
        """Line and column (1-based) of every value: mapping values, list items, the root."""
        if self._values is None:
            self._record_positions()
        assert self._values is not None
        return self._values

    @property
    def keys(self) -> dict[PointerParts, tuple[int, int]]:
        """Line and column (1-based) of every mapping key, by the pointer to its value."""
        if self._keys is None:
            self._record_positions()
        assert self._keys is not None
        return self._keys

    def _record_positions(self) -> None:
        self._values, self._keys = {}, {}
        if self._text is not None:
            try:
                walked = _load_nodes(self._text, self.path)
            except LoadError:  # pragma: no cover - the text loaded once already
                return
            self._values, self._keys = walked.values, walked.keys

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

    def where(
        self, parts: PointerParts, *, key: bool = False, missing: bool = False
    ) -> tuple[str, int, int, bool]:
        """(path, line, col, from_config) for a pointer into the merged spec.

        `missing=True` is for problems about something absent (a required key, one of several
        alternatives): the spec should add it, so they always point into the spec.
        """
        parts = tuple(parts)
        if missing or parts in self.document.values or not self.config:
            return (self.document.path, *self.document.locate(parts, key=key), False)
        in_config = ("defaults", *parts)
        if in_config in self.config.values:
            return (self.config.path, *self.config.locate(in_config, key=key), True)
        return (self.document.path, *self.document.locate(parts, key=key), False)


class _Walker:
    """Turns composed nodes into data, recording positions and refusing what we do not accept."""

    def __init__(self, path: str, loader: Any) -> None:
        self.path = path
        self.loader = loader
        self.count = 0
        self.values: dict[PointerParts, tuple[int, int]] = {}
        self.keys: dict[PointerParts, tuple[int, int]] = {}

    def fail(self, node: Node, reason: str, hint: str = "") -> LoadError:
        return LoadError(
            self.path, reason, node.start_mark.line + 1, node.start_mark.column + 1, hint
        )

    def walk(self, node: Node, parts: PointerParts, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(
                node,
                f"too many values after expanding YAML aliases (more than {MAX_NODES})",
                "a spec needs a few hundred; anchors/aliases that expand exponentially "
                "(a 'billion laughs' file) are refused",
            )
        if depth > MAX_DEPTH:
            raise self.fail(
                node,
                f"nested more than {MAX_DEPTH} levels deep",
                "recursive aliases or runaway nesting are refused",
            )
        self.values[parts] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            return [self.walk(item, (*parts, i), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self.mapping(node, parts, depth)
        raise self.fail(node, "unsupported YAML node")  # pragma: no cover - yaml has 3 kinds

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag == _STR_TAG:
            return node.value  # most scalars; the constructor would return the same string
        if node.tag == _TIMESTAMP_TAG:
            # YAML 1.1 turns 2024-01-01 into a date; a spec has no dates, keep the text (without
            # building the date: 2024-13-45 looks like one but is no valid date).
            return node.value
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.fail(node, _first_line(exc)) from None
        if isinstance(value, (datetime.date, datetime.datetime)):  # an explicit !!timestamp
            return node.value
        if isinstance(value, bytes):
            raise self.fail(node, "binary (!!binary) values are not supported")
        return value

    def mapping(self, node: MappingNode, parts: PointerParts, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        explicit: dict[str, Node] = {}
        for key_node, value_node, is_merged in self._merged_pairs(node):
            if not isinstance(key_node, ScalarNode):
                raise self.fail(
                    key_node, "mapping keys must be plain strings, not lists or mappings"
                )
            key = self.scalar(key_node)
            if key is None or isinstance(key, (bool, float)):
                # `yes:`/`null:` as a key is almost always a mistake; insist on text.
                key = key_node.value
            key = str(key)
            if not is_merged:
                if key in explicit:
                    first = explicit[key].start_mark.line + 1
                    raise self.fail(
                        key_node,
                        f'duplicate key "{key}" (first defined on line {first})',
                        "YAML would silently keep only the last one; remove one of them",
                    )
                explicit[key] = key_node
            child = (*parts, key)
            self.keys[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = self.walk(value_node, child, depth + 1)
        return out

    def _merged_pairs(self, node: MappingNode) -> list[tuple[Node, Node, bool]]:
        """(key, value, merged?) pairs, merge keys (`<<: *base`) resolved; own keys win."""
        if not any(key_node.tag == _MERGE_TAG for key_node, _ in node.value):
            return [(key_node, value_node, False) for key_node, value_node in node.value]
        merged: list[tuple[Node, Node]] = []
        own: list[tuple[Node, Node, bool]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if not isinstance(source, MappingNode):
                        raise self.fail(
                            source, "a merge key (<<) needs a mapping or a list of mappings"
                        )
                    merged.extend((k, v) for k, v, _ in self._merged_pairs(source))
            else:
                own.append((key_node, value_node, False))
        if not merged:
            return own
        own_keys = {k.value for k, _, _ in own}
        seen: set[str] = set()
        result: list[tuple[Node, Node, bool]] = []
        for key_node, value_node in merged:
            if key_node.value in own_keys or key_node.value in seen:
                continue
            seen.add(key_node.value)
            result.append((key_node, value_node, True))
        return result + own


def _first_line(exc: BaseException) -> str:
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem:
        return f"{context}, {problem}" if context else str(problem)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _check_text(path: str, raw: bytes) -> str:
    if len(raw) > MAX_BYTES:
        raise LoadError(
            path,
            f"file is {len(raw):,} bytes; the limit is {MAX_BYTES:,} bytes (1 MiB)",
            hint="an experiment spec is a few kilobytes; is this the right file?",
        )
    if b"\x00" in raw:
        raise LoadError(path, "this is a binary file, not YAML text (it contains NUL bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise LoadError(
            path,
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            line,
            col,
            "save the file as UTF-8",
        ) from None
    if not text.strip() or all(
        not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()
    ):
        raise LoadError(
            path, "file is empty", hint="an experiment needs apiVersion, kind, metadata and spec"
        )
    for number, row in enumerate(text.splitlines() if "\t" in text else (), start=1):
        indent = row[: len(row) - len(row.lstrip(" \t"))]
        if "\t" in indent and row.strip() and not row.lstrip().startswith("#"):
            raise LoadError(
                path,
                "tab character in indentation",
                number,
                indent.index("\t") + 1,
                "YAML indents with spaces only; replace the tab with spaces",
            )
    return text


def load_text(text: str, path: str) -> Document:
    """Parse one YAML document (already decoded) into a Document; see module docstring."""
    data = _load_plain(text)
    if data is not None:
        return Document(path=path, data=data, text=text)
    return _load_nodes(text, path)


def _load_nodes(text: str, path: str) -> Document:
    """The careful load: compose nodes, walk them, record positions, explain every refusal."""
    loader = _BaseLoader(text)
    try:
        try:
            # check_node() first: it consumes the stream-start event (the C parser needs that).
            node = loader.get_node() if loader.check_node() else None
            if node is not None and loader.check_node():
                extra = loader.get_node()
                mark = extra.start_mark if extra is not None else None
                raise LoadError(
                    path,
                    "file holds more than one YAML document (separated by ---)",
                    mark.line + 1 if mark else 0,
                    mark.column + 1 if mark else 0,
                    "put one experiment per file: experiments/<name>.yaml",
                )
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise LoadError(
                path,
                f"invalid YAML: {_first_line(exc)}",
                mark.line + 1 if mark else 0,
                mark.column + 1 if mark else 0,
            ) from None
        except yaml.YAMLError as exc:
            raise LoadError(path, f"invalid YAML: {_first_line(exc)}") from None
        except RecursionError:
            raise LoadError(path, "YAML nested too deeply to read") from None
        if node is None:
            raise LoadError(
                path,
                "file is empty",
                hint="an experiment needs apiVersion, kind, metadata and spec",
            )
        if not isinstance(node, MappingNode):
            kind = "a list" if isinstance(node, SequenceNode) else "a single value"
            raise LoadError(
                path,
                f"the top level must be a mapping of keys to values, not {kind}",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                "start with `apiVersion: tfgen.io/v1`",
            )
        walker = _Walker(path, loader)
        try:
            data = walker.walk(node, (), 0)
        except RecursionError:
            raise LoadError(path, "YAML nested too deeply to read") from None
        return Document(path=path, data=data, values=walker.values, keys=walker.keys)
    finally:
        loader.dispose()


def load_file(path: Path | str, display: str | None = None) -> Document:
    """Read and parse a YAML file strictly; `display` is the path shown in messages."""
    shown = display or str(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
            if len(raw) > MAX_BYTES:
                size = Path(path).stat().st_size
                raise LoadError(
                    shown,
                    f"file is {size:,} bytes; the limit is {MAX_BYTES:,} bytes (1 MiB)",
                    hint="an experiment spec is a few kilobytes; is this the right file?",
                )
    except OSError as exc:
        raise LoadError(shown, f"cannot read file: {exc.strerror}") from None
    return load_text(_check_text(shown, raw), shown)


def load_bytes(raw: bytes, path: str) -> Document:
    """Like `load_file` for content already in memory."""
    return load_text(_check_text(path, raw), path)


# --- the fast path ---------------------------------------------------------------------------
#
# Almost every spec is plain YAML: one document, a mapping at the top, no anchors, aliases,
# tags, merge keys or duplicate keys. Such a document is built straight from the parser's
# events, without nodes and without positions (those are recorded later if a problem needs
# them). Anything else, including any error, makes `_load_plain` return None and the careful
# node walk above decides, so refusals and their messages are always the walk's.


class _NotPlain(Exception):
    """The document needs the careful load."""


_PLAIN_SCALARS: dict[str, Any] = {}  # plain scalar text -> value; specs repeat the same words
_PLAIN_CACHE_LIMIT = 50_000
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _plain_scalar(text: str) -> Any:
    """The value of an untagged plain scalar, exactly as `_Walker.scalar` would build it."""
    try:
        return _PLAIN_SCALARS[text]
    except KeyError:
        pass
    tag = _RESOLVER.resolve(ScalarNode, text, (True, False))
    if tag in (_STR_TAG, _TIMESTAMP_TAG):  # a spec has no dates: keep the text
        value: Any = text
    elif tag == _MERGE_TAG:
        raise _NotPlain
    else:
        try:
            value = _CONSTRUCTOR.construct_object(ScalarNode(tag, text), deep=True)
        except Exception:
            raise _NotPlain from None
        finally:
            _CONSTRUCTOR.constructed_objects.clear()
        if isinstance(value, (bytes, datetime.date)):  # pragma: no cover - needs a tag
            raise _NotPlain
    if len(_PLAIN_SCALARS) >= _PLAIN_CACHE_LIMIT:
        _PLAIN_SCALARS.clear()
    _PLAIN_SCALARS[text] = value
    return value


def _load_plain(text: str) -> dict[str, Any] | None:
    """The data of a plain document (see above), or None when it needs the careful load."""
    loader = _BaseLoader(text)
    try:
        return _build_plain(loader.get_event)
    except (_NotPlain, yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()


def _build_plain(next_event: Any) -> dict[str, Any]:
    if type(next_event()) is not StreamStartEvent or type(next_event()) is not DocumentStartEvent:
        raise _NotPlain
    event = next_event()
    if type(event) is not MappingStartEvent or event.anchor is not None or event.tag is not None:
        raise _NotPlain
    root: dict[str, Any] = {}
    # One frame per open collection: (container, pending key or None, is it a mapping).
    stack: list[tuple[Any, str | None, bool]] = []
    current: Any = root
    key: str | None = None
    in_mapping = True
    events = 1
    while True:
        event = next_event()
        kind = type(event)
        events += 1
        if kind is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _NotPlain
            value = _plain_scalar(event.value) if event.implicit[0] else event.value
            if not in_mapping:
                current.append(value)
            elif key is None:
                if value is None or isinstance(value, (bool, float)):
                    value = event.value  # as `_Walker.mapping`: such keys keep their text
                key = value if type(value) is str else str(value)
                if key in current:
                    raise _NotPlain  # a duplicate key: the careful load says where
            else:
                current[key] = value
                key = None
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.anchor is not None or event.tag is not None:
                raise _NotPlain
            if in_mapping and key is None:
                raise _NotPlain  # a mapping or list used as a key
            new: Any = {} if kind is MappingStartEvent else []
            if in_mapping:
                current[key] = new
            else:
                current.append(new)
            stack.append((current, key, in_mapping))
            if len(stack) >= MAX_DEPTH:
                raise _NotPlain
            current, key, in_mapping = new, None, kind is MappingStartEvent
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            if not stack:
                break
            current, _, in_mapping = stack.pop()
            key = None
        else:
            raise _NotPlain  # an alias
        if events > MAX_NODES:
            raise _NotPlain
    if type(next_event()) is not DocumentEndEvent or type(next_event()) is not StreamEndEvent:
        raise _NotPlain  # more than one document
    return root
