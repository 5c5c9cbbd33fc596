"""The careful YAML load: compose nodes, walk them, record positions, explain every refusal.

The walk turns composed nodes into plain data by our own rules: it records the line and column
of every mapping key, mapping value and sequence item, refuses duplicate keys and binary
values, keeps date-like text as text, and bounds alias and merge-key expansion (a "billion
laughs" file stops after a fixed number of nodes, with bounded memory, because aliases are
expanded lazily by us and counted). Every failure is a `LoadError` carrying the location.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ...errors import InputError
from ...problems import Problem
from ...repo.yamlread import MERGE_TAG, SafeLoader
from . import errors as yamlerrors
from .document import Document, PointerParts, Positions, pointer_text

MAX_NODES = 10_000  # values after alias expansion; a real spec has a few hundred
MAX_DEPTH = 64

STR_TAG = "tag:yaml.org,2002:str"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
INT_TAG = "tag:yaml.org,2002:int"
BOOL_TAG = "tag:yaml.org,2002:bool"
# Numbers and booleans as every YAML reader agrees on them (YAML 1.2 core, YAML 1.1, PyYAML):
# plain decimal integers, true and false. YAML 1.1 also reads 010 as 8, 0x10 as 16, 0b11 as 3,
# 1:30 as 90, 1_000 as 1000 and yes/no/on/off as booleans, which surprises people and which
# YAML 1.2 readers do not share; a spec must say the number or the boolean itself.
PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
PLAIN_BOOLS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
BaseLoader: type[Any] = SafeLoader


class LoadError(InputError):
    """A file that cannot be loaded as one YAML mapping; `line`/`col` are 1-based (0 unknown)."""

    def __init__(
        self, path: str, reason: str, line: int = 0, col: int = 0, hint: str = "",
        pointer: str = "",
    ) -> None:
        where = f"{path}:{line}:{col or 1}" if line else path
        text = f"{where}: " + (f"{pointer}: " if pointer else "") + reason
        super().__init__(text + (f" ({hint})" if hint else ""))
        self.path = path
        self.reason = reason
        self.line = line
        self.col = col
        self.hint = hint
        self.pointer = pointer

    def problem(self) -> Problem:
        """The refusal as a Problem, for a result that reports every file at once."""
        return Problem(self.path, self.line, self.col, self.pointer, self.reason, self.hint)


def _int_kind(text: str) -> str:
    """How a YAML 1.1 integer that is not plain decimal is written."""
    digits = text.lstrip("+-")
    if ":" in digits:
        return "a sexagesimal (base 60) number"
    if digits[:2] in ("0x", "0X"):
        return "a hexadecimal number"
    if digits[:2] in ("0b", "0B"):
        return "a binary number"
    if digits[:1] == "0" and len(digits.replace("_", "")) > 1:
        return "an octal number"
    return "a number with underscores"


def yaml11_surprise(tag: str, text: str, value: Any) -> tuple[str, str] | None:
    """(reason, hint) when a scalar's text means `value` only to YAML 1.1 readers (see
    PLAIN_INT), None for the plain forms everyone reads the same."""
    if tag == INT_TAG and not PLAIN_INT.fullmatch(text):
        what = _int_kind(text)
    elif tag == BOOL_TAG and text not in PLAIN_BOOLS:
        what = "a boolean"
        value = "true" if value else "false"
    else:
        return None
    shown = text if len(text) <= 40 else text[:37] + "..."
    return (f"`{shown}` is {what} in YAML 1.1, read as {value}",
            f'write {value}, or "{shown}" if you meant a string')


class _Walker:
    """Turns composed nodes into data, recording positions and refusing what we do not accept."""

    def __init__(self, path: str, loader: Any) -> None:
        self.path = path
        self.loader = loader
        self.count = 0
        self.values: dict[PointerParts, tuple[int, int]] = {}
        self.keys: dict[PointerParts, tuple[int, int]] = {}

    def fail(
        self, node: Node, reason: str, hint: str = "", parts: PointerParts | None = None
    ) -> LoadError:
        return LoadError(
            self.path, reason, node.start_mark.line + 1, node.start_mark.column + 1, hint,
            pointer_text(parts) if parts is not None else "",
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
            return self.scalar(node, parts)
        if isinstance(node, SequenceNode):
            return [self.walk(item, (*parts, i), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self.mapping(node, parts, depth)
        raise self.fail(node, "unsupported YAML node")  # pragma: no cover - yaml has 3 kinds

    def scalar(self, node: ScalarNode, parts: PointerParts) -> Any:
        if node.tag == STR_TAG:
            return node.value  # most scalars; the constructor would return the same string
        if node.tag == TIMESTAMP_TAG:
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
        surprise = yaml11_surprise(node.tag, node.value, value)
        if surprise is not None:
            raise self.fail(node, *surprise, parts=parts)
        return value

    def mapping(self, node: MappingNode, parts: PointerParts, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        explicit: dict[str, Node] = {}
        for key_node, value_node, is_merged in self._merged_pairs(node):
            if not isinstance(key_node, ScalarNode):
                raise self.fail(
                    key_node, "mapping keys must be plain strings, not lists or mappings"
                )
            # A key is its text: `yes:`, `null:`, `0x10:` and `1.0:` stay what was written.
            key = key_node.value
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
        if not any(key_node.tag == MERGE_TAG for key_node, _ in node.value):
            return [(key_node, value_node, False) for key_node, value_node in node.value]
        merged: list[tuple[Node, Node]] = []
        own: list[tuple[Node, Node, bool]] = []
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                merged += self._merge_key_pairs(key_node, value_node)
            else:
                own.append((key_node, value_node, False))
        if not merged:
            return own
        return _under_own_keys(merged, own)

    def _merge_key_pairs(self, key_node: Node, value_node: Node) -> list[tuple[Node, Node]]:
        """The (key, value) pairs one merge key brings in from its mapping or list of
        mappings, in order, each counted like a value."""
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        merged: list[tuple[Node, Node]] = []
        for source in sources:
            if not isinstance(source, MappingNode):
                raise self.fail(
                    source, "a merge key (<<) needs a mapping or a list of mappings"
                )
            pairs = self._merged_pairs(source)
            # Each merged pair counts like a value: merge keys over aliases expand
            # like aliases do (ten keys merging ten times, nine levels deep: 10^9).
            self.count += len(pairs)
            if self.count > MAX_NODES:
                raise self.fail(
                    key_node,
                    f"too many keys after expanding YAML merge keys (<<) and aliases "
                    f"(more than {MAX_NODES})",
                    "a spec needs a few hundred; merge keys that expand exponentially "
                    "are refused",
                )
            merged.extend((k, v) for k, v, _ in pairs)
        return merged


def _under_own_keys(
    merged: list[tuple[Node, Node]], own: list[tuple[Node, Node, bool]]
) -> list[tuple[Node, Node, bool]]:
    """A mapping's merged pairs, then its own: a key of its own hides a merged one, and of
    two merged keys the first wins."""
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


def load_nodes(text: str, path: str) -> Document:
    """The careful load: compose nodes, walk them, record positions, explain every refusal."""
    loader = BaseLoader(text)
    try:
        node = _document_node(loader, text, path)
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


def _document_node(loader: Any, text: str, path: str) -> Node | None:
    """The file's one document, composed (None: the file holds none); a second document and
    every syntax error are refused in words."""
    try:
        # check_node() first: it consumes the stream-start event (the C parser needs that).
        node = loader.get_node() if loader.check_node() else None
        if node is not None and loader.check_node():
            raise _second_document(path, loader.get_node())
    except yaml.MarkedYAMLError as exc:
        said = yamlerrors.explain(exc, text)
        raise LoadError(path, said.message, said.line, said.column, said.hint) from None
    except yaml.YAMLError as exc:
        raise LoadError(path, f"invalid YAML: {_first_line(exc)}") from None
    except RecursionError:
        raise LoadError(path, "YAML nested too deeply to read") from None
    return node


def _second_document(path: str, extra: Node | None) -> LoadError:
    """A file of several documents, refused at the start of the second."""
    mark = extra.start_mark if extra is not None else None
    return LoadError(
        path,
        "file holds more than one YAML document (separated by ---)",
        mark.line + 1 if mark else 0,
        mark.column + 1 if mark else 0,
        "put one experiment per file: experiments/<name>.yaml",
    )


def positions(text: str, path: str) -> tuple[Positions, Positions]:
    """(values, keys) positions of a document that loaded once already."""
    try:
        walked = load_nodes(text, path)
    except LoadError:  # pragma: no cover - the text loaded once already
        return {}, {}
    return walked.values, walked.keys
