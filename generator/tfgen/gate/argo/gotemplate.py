"""Go-template substitution as the ApplicationSet controller does it, for `applications`.

The committed ApplicationSet sets `goTemplate: true` with `missingkey=error`: each placeholder
`{{.key}}`/`{{.a.b}}` takes a generator parameter, and a missing one fails the Application.
Only that placeholder form is understood; any other `{{` is an error rather than a silent
pass-through, so the resolver never pretends to understand a template it does not.

A template is compiled once (`compiled`) and filled once per generator file: ten thousand
Applications come from one template, and walking all of it for each was most of the cost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_PLACEHOLDER = re.compile(
    r"\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*-?\}\}"
)


class TemplateError(Exception):
    """A placeholder the resolver cannot substitute (missing key or unsupported syntax)."""


_Fill = Callable[[Mapping[str, Any]], Any]


def compiled(node: Any) -> _Fill:
    """`node` as a function of the parameters: it returns `node` with each placeholder filled
    from them, or raises TemplateError for a missing key, a value that is no scalar, or any
    other `{{`. The parts of the template without a placeholder are returned as they are:
    Applications filled from one template share them, and are read, never changed."""
    if isinstance(node, str):
        return _compiled_text(node) if "{{" in node else _Constant(node)
    if isinstance(node, dict):
        return _compiled_mapping(node)
    if isinstance(node, list):
        return _filled_copy(node, range(len(node)), [compiled(value) for value in node])
    return _Constant(node)


def _compiled_mapping(node: dict[Any, Any]) -> _Fill:
    """A mapping's template: a filled copy when its keys are constant, else (a placeholder in
    a key) a mapping built anew from the filled keys and values."""
    keys = [compiled(key) for key in node]
    values = [compiled(value) for value in node.values()]
    if all(isinstance(key, _Constant) for key in keys):
        return _filled_copy(node, list(node), values)
    pairs = list(zip(keys, values, strict=True))

    def built(params: Mapping[str, Any]) -> dict[Any, Any]:
        return {key(params): value(params) for key, value in pairs}

    return built


def _filled_copy(node: dict[Any, Any] | list[Any], positions: Sequence[Any],
                 fills: list[_Fill]) -> _Fill:
    """A mapping or list whose keys are constant: a shallow copy of it (in its order), with
    the entries that hold placeholders filled in, in order."""
    todo = [(position, fill) for position, fill in zip(positions, fills, strict=True)
            if not isinstance(fill, _Constant)]
    if not todo:
        return _Constant(node)

    def filled(params: Mapping[str, Any]) -> Any:
        copy = node.copy()
        for position, fill in todo:
            copy[position] = fill(params)
        return copy

    return filled


class _Constant:
    """A part of a template without placeholders: the same object for every generator file."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, params: Mapping[str, Any]) -> Any:
        return self.value


def _compiled_text(text: str) -> _Fill:
    # literal text and placeholders, split once: (literal, placeholder, key path) triples
    pieces = []
    last = 0
    for match in _PLACEHOLDER.finditer(text):
        pieces.append((text[last:match.start()], match.group(0), match.group(1).split(".")))
        last = match.end()
    tail = text[last:]
    # a `{{` outside the placeholders is syntax the resolver does not know; a `{{` in a value
    # is text, printed as it is (Go parses the template, never the values)
    unsupported = "{{" in tail or any("{{" in literal for literal, _, _ in pieces)

    def fill(params: Mapping[str, Any]) -> str:
        if unsupported:
            raise TemplateError(f"unsupported template syntax in {text!r}")
        out = []
        for literal, placeholder, keys in pieces:
            out.append(literal)
            out.append(_lookup(params, placeholder, keys))
        out.append(tail)
        return "".join(out)

    return fill


def _lookup(params: Mapping[str, Any], placeholder: str, keys: list[str]) -> str:
    """A placeholder's value as Go's text/template prints it."""
    value: Any = params
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            raise TemplateError(f"map has no entry for key {key!r} (in {placeholder})")
        value = value[key]
    if isinstance(value, (dict, list)):
        raise TemplateError(f"{placeholder} is not a scalar")
    if isinstance(value, bool):  # Go prints booleans lower-case
        return str(value).lower()
    return "" if value is None else str(value)


