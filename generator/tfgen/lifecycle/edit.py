"""Edits to a spec's YAML text at the positions its nodes were read from.

A spec is a reviewed file with comments and a layout people chose: re-dumping it would lose
both. These edits compose the text's nodes (the same YAML reader as every other tfgen reader),
and replace a scalar between its start and end marks, or insert one line into a block mapping,
so that everything else stays byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..errors import InputError
from ..render.generated import is_plain, quoted
from ..repo.yamlread import SafeLoader

Path = tuple[str | int, ...]
_FLOW_CHARS = re.compile(r"[,\[\]{}#]")


@dataclass(frozen=True)
class Scalar:
    """A string scalar of the text: where it is (`path`), its value, its span."""

    path: Path
    value: str
    start: int
    end: int
    plain: bool


def compose(text: str, shown: str) -> Node:
    try:
        node = yaml.compose(text, Loader=SafeLoader)  # noqa: S506 (safe loader)
    except yaml.YAMLError as exc:
        raise InputError(f"{shown}: not valid YAML: {exc}") from exc
    if not isinstance(node, MappingNode):
        raise InputError(f"{shown}: not an experiment spec (no mapping at the top)")
    return node


def scalars(node: Node, path: Path = ()) -> Iterator[Scalar]:
    """Every string scalar value (not key) below `node`, with its path."""
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if isinstance(key, ScalarNode):
                yield from scalars(value, (*path, str(key.value)))
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            yield from scalars(item, (*path, index))
    elif isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:str":
        yield Scalar(path, str(node.value), node.start_mark.index, node.end_mark.index,
                     node.style in (None, ""))


def find(node: Node, path: Path) -> Node | None:
    """The node at `path` below `node`, or None."""
    found: Node | None = node
    for part in path:
        if isinstance(found, MappingNode) and isinstance(part, str):
            found = next((v for k, v in found.value
                          if isinstance(k, ScalarNode) and k.value == part), None)
        elif (isinstance(found, SequenceNode) and isinstance(part, int)
              and part < len(found.value)):
            found = found.value[part]
        else:
            return None
    return found


def scalar_text(value: str, plain: bool) -> str:
    """`value` as YAML text: plain where it was plain and stays unambiguous, else quoted."""
    if plain and is_plain(value) and not _FLOW_CHARS.search(value):
        return value
    return quoted(value)


class TextEdit:
    """Replacements and insertions collected on one text, applied together from the end so
    that each keeps its marks."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.changes: list[tuple[int, int, str]] = []

    def replace(self, scalar: Scalar, value: str) -> None:
        self.changes.append((scalar.start, scalar.end, scalar_text(value, scalar.plain)))

    def set_in_mapping(self, mapping: Node, key: str, value: str, shown: str,
                       raw: bool = False) -> None:
        """Set `key: value` in a mapping: replace the value when the key is there, else add it
        first (a line at the indentation of the first key of a block mapping, or an entry
        after the `{` of a flow mapping). `raw`: `value` is YAML text already (`{}`)."""
        text = value if raw else scalar_text(value, True)
        existing = find(mapping, (key,))
        if isinstance(existing, ScalarNode):
            self.changes.append((existing.start_mark.index, existing.end_mark.index,
                                 scalar_text(value, existing.style in (None, ""))))
            return
        if isinstance(mapping, MappingNode) and mapping.flow_style and existing is None:
            entry = f"{key}: {text}"
            start = mapping.start_mark.index + 1  # after the `{`
            self.changes.append((start, start, entry + (", " if mapping.value else "")))
            return
        if existing is not None or not isinstance(mapping, MappingNode) or not mapping.value:
            raise InputError(f"{shown}: cannot set {key} here (the mapping is not written "
                             f"as one key per line); set `{key}: {value}` by hand")
        self._add_first_line(mapping, f"{key}: {text}")

    def _add_first_line(self, mapping: MappingNode, line: str) -> None:
        """Insert `line` into a block mapping before its first key, at that key's indentation."""
        first = mapping.value[0][0]
        line_start = self.text.rfind("\n", 0, first.start_mark.index) + 1
        indent = " " * first.start_mark.column
        # Above the comment lines that belong to the first key, not between them and it.
        while line_start > 0:
            previous = self.text.rfind("\n", 0, line_start - 1) + 1
            if not self.text[previous:line_start].startswith(indent + "#"):
                break
            line_start = previous
        self.changes.append((line_start, line_start, f"{indent}{line}\n"))

    def apply(self) -> str:
        text = self.text
        for start, end, new in sorted(self.changes, reverse=True):
            text = text[:start] + new + text[end:]
        return text


def renamer(old: str, new: str) -> Callable[[str], str]:
    """A function replacing `old` where it stands as a whole name (not inside a longer name,
    such as `mnist` in `distributed-mnist` or `mnist-data`) by `new`."""
    pattern = re.compile(rf"(?<![A-Za-z0-9_-]){re.escape(old)}(?![A-Za-z0-9_-])")
    return lambda value: pattern.sub(new, value)
