"""Strict YAML loading: a file's bytes -> one Document whose values know their position.

A spec is read as bytes through the one safe reader (`repo.files`) and checked for the mistakes
that make YAML confusing (not UTF-8, binary, tabs in indentation, empty, too large); then
parsed. Almost every spec is plain YAML and takes the fast path below; anything else (and every
refusal: several documents, a top level that is not a mapping, duplicate keys, alias bombs,
YAML 1.1 numbers and booleans) goes through the careful walk of `nodes`.
Every failure is a `LoadError` (an `InputError`) carrying the location, never a traceback.
"""

from __future__ import annotations

import datetime
import itertools
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
from yaml.nodes import ScalarNode

from ...repo.files import MAX_BYTES, SIZE_HINT, Refused, read_input, too_large
from .document import Document
from .nodes import (
    MAX_DEPTH,
    MAX_NODES,
    MERGE_TAG,
    STR_TAG,
    TIMESTAMP_TAG,
    BaseLoader,
    LoadError,
    load_nodes,
    positions,
    yaml11_surprise,
)

__all__ = ["MAX_BYTES", "LoadError", "load_bytes", "load_file", "load_text", "read_file"]


def _check_text(path: str, raw: bytes) -> str:
    if len(raw) > MAX_BYTES:
        raise LoadError(path, too_large(len(raw)), hint=SIZE_HINT)
    if b"\x00" in raw:
        raise LoadError(path, "this is a binary file, not YAML text (it contains NUL bytes)")
    text = _decoded(path, raw)
    if _is_empty(text):
        raise LoadError(
            path, "file is empty", hint="an experiment needs apiVersion, kind, metadata and spec"
        )
    _check_indentation(path, text)
    return text


def _decoded(path: str, raw: bytes) -> str:
    """The text of UTF-8 bytes (a BOM dropped); bytes that are not UTF-8 are refused at the
    line and column of the first bad one."""
    try:
        return raw.decode("utf-8-sig")
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


def _is_empty(text: str) -> bool:
    """Nothing but blank lines and comments: no experiment at all."""
    return not text.strip() or all(
        not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()
    )


def _check_indentation(path: str, text: str) -> None:
    """A tab in indentation is refused at its line: YAML indents with spaces only."""
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


def load_text(text: str, path: str) -> Document:
    """Parse one YAML document (already decoded) into a Document; see module docstring."""
    data = _load_plain(text)
    if data is not None:
        return Document(path, data, positions=lambda: positions(text, path))
    return load_nodes(text, path)


def read_file(path: Path | str, shown: str, root: Path | None = None) -> bytes:
    """A file's bytes through the one safe reader (`repo.files.read_input`: regular files
    only, never leaving `root` through a symlink, at most MAX_BYTES), refusals as LoadError."""
    try:
        return read_input(path, shown, root)
    except Refused as exc:
        raise LoadError(shown, exc.reason, hint=exc.hint) from None


def load_file(
    path: Path | str, display: str | None = None, root: Path | None = None
) -> Document:
    """Read and parse a YAML file strictly; `display` is the path shown in messages, `root`
    the repository the file must not leave through a symlink."""
    shown = display or str(path)
    return load_bytes(read_file(path, shown, root), shown)


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
    if tag in (STR_TAG, TIMESTAMP_TAG):  # a spec has no dates: keep the text
        value: Any = text
    elif tag == MERGE_TAG:
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
        if yaml11_surprise(tag, text, value) is not None:
            raise _NotPlain  # refused by the careful walk, with its position
    if len(_PLAIN_SCALARS) >= _PLAIN_CACHE_LIMIT:
        _PLAIN_SCALARS.clear()
    _PLAIN_SCALARS[text] = value
    return value


def _load_plain(text: str) -> dict[str, Any] | None:
    """The data of a plain document (see above), or None when it needs the careful load."""
    loader = BaseLoader(text)
    # At most MAX_NODES events: a larger document is left to the careful walk, which counts
    # its values (never more than its events) and refuses too many in words.
    events = itertools.islice(iter(loader.get_event, None), MAX_NODES)
    try:
        return _build_plain(events.__next__)
    except (_NotPlain, StopIteration, yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()


def _expect(next_event: Any, *kinds: type) -> None:
    for kind in kinds:
        if type(next_event()) is not kind:
            raise _NotPlain


def _build_plain(next_event: Any) -> dict[str, Any]:
    _expect(next_event, StreamStartEvent, DocumentStartEvent)
    root = _value(next_event(), next_event, 0)
    if type(root) is not dict:
        raise _NotPlain
    _expect(next_event, DocumentEndEvent, StreamEndEvent)  # else more than one document
    return root


# One function per kind of node, each taking the events of its node: an event that does not
# fit a plain document (an alias, a tag, a mapping or list as a key) raises _NotPlain.


def _value(event: Any, next_event: Any, depth: int) -> Any:
    """The value an event opens: a scalar's, or the collection built from the events after it."""
    if event.anchor is not None or event.tag is not None:
        raise _NotPlain
    kind = type(event)
    if kind is ScalarEvent:
        return _plain_scalar(event.value) if event.implicit[0] else event.value
    if depth >= MAX_DEPTH:
        raise _NotPlain
    if kind is MappingStartEvent:
        return _mapping(next_event, depth + 1)
    if kind is SequenceStartEvent:
        return _sequence(next_event, depth + 1)
    raise _NotPlain  # an alias


def _mapping(next_event: Any, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while type(event := next_event()) is not MappingEndEvent:
        if type(event) is not ScalarEvent or event.anchor is not None or event.tag is not None:
            raise _NotPlain  # a mapping or list used as a key, an alias, a tag
        key = event.value  # as `_Walker.mapping`: a key is its text
        if key in out or key == "<<":
            raise _NotPlain  # a duplicate key (the careful load says where), a merge
        out[key] = _value(next_event(), next_event, depth)
    return out


def _sequence(next_event: Any, depth: int) -> list[Any]:
    out: list[Any] = []
    while type(event := next_event()) is not SequenceEndEvent:
        out.append(_value(event, next_event, depth))
    return out
