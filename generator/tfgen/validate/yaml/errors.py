"""YAML syntax errors in words: where the problem is, what it is, and what to do.

The parser reports where it gave up, which is often a line after the mistake (an unclosed `{`
is found at the next line), in its own terms ("mapping values are not allowed in this
context"). The usual mistakes of a hand-written spec are recognised here from the error and
the text around it: a key indented deeper than its siblings, a `: ` inside a plain value, a
bracket or quote never closed, a key without its `:`, a line no mapping expects. Each is said
at the line and column where the mistake is, with the fix; anything else keeps the parser's
first line at its mark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class Explained:
    """A syntax error as a problem: what, where (1-based), and what to do."""

    message: str
    line: int
    column: int
    hint: str = ""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content_before(lines: list[str], index: int) -> int | None:
    """The index of the nearest line above `index` holding more than a comment."""
    for i in range(index - 1, -1, -1):
        stripped = lines[i].strip()
        if stripped and not stripped.startswith("#"):
            return i
    return None


def _mapping_value(exc: yaml.MarkedYAMLError, lines: list[str]) -> Explained | None:
    """`mapping values are not allowed`: a key indented under a key that has its value, or a
    `: ` inside a plain value."""
    mark = exc.problem_mark
    if mark is None or mark.line >= len(lines):
        return None
    here = lines[mark.line]
    colon = here.find(": ")  # the line's own key's, when its value holds another
    if 0 <= colon < mark.column - 1:
        return Explained(f"the value on line {mark.line + 1} holds `: `, which YAML reads as "
                         "the start of another key", mark.line + 1, mark.column + 1,
                         "quote the whole value (\"...\") to keep it as text")
    above = _content_before(lines, mark.line)
    if above is None or _indent(here) < _indent(lines[above]):
        return None
    if _indent(here) == _indent(lines[above]):  # the line above went on into this one
        prior = lines[above].rstrip()
        if ": " in prior or prior.endswith(":") or prior.lstrip().startswith("-"):
            return None
        return Explained(f"line {above + 1} (`{lines[above].strip()}`) is neither `key: value` "
                         "nor a list item", above + 1, _indent(lines[above]) + 1,
                         "add `: ` after the key")
    return Explained(
        f"line {mark.line + 1} is indented {_indent(here)} spaces, deeper than line "
        f"{above + 1} (`{lines[above].strip()}`), which already holds its value",
        mark.line + 1, _indent(here) + 1,
        f"indent it like the keys it belongs with ({_indent(lines[above])} spaces on line "
        f"{above + 1}), or, if it belongs under that key, take the key's value off its line")


# flow collection -> (its opening, its closing, an example)
_CLOSERS = {"flow mapping": ("{", "}", "{a: 1, b: 2}"), "flow sequence": ("[", "]", "[a, b]")}


def _unclosed_flow(exc: yaml.MarkedYAMLError, lines: list[str]) -> Explained | None:
    """A `{` or `[` never closed: said where it opens, not where the parser noticed."""
    opened = exc.context_mark
    kind = next((k for k in _CLOSERS if k in (exc.context or "")), None)
    if opened is None or kind is None:
        return None
    start, end, example = _CLOSERS[kind]
    return Explained(f"the `{start}` at line {opened.line + 1}, column {opened.column + 1} is "
                     f"not closed where its items end", opened.line + 1, opened.column + 1,
                     f"close it with `{end}`, with a `,` between items (`{example}`), or "
                     "write the items one per line instead")


def _unclosed_quote(exc: yaml.MarkedYAMLError, lines: list[str]) -> Explained | None:
    opened = exc.context_mark
    if opened is None or "quoted scalar" not in (exc.context or ""):
        return None
    return Explained(f"the quote at line {opened.line + 1}, column {opened.column + 1} is "
                     "never closed", opened.line + 1, opened.column + 1,
                     "end the value with the same quote; a quote inside it is written twice "
                     "('') in single quotes or escaped (\\\") in double quotes")


def _key_without_colon(exc: yaml.MarkedYAMLError, lines: list[str]) -> Explained | None:
    opened = exc.context_mark
    if opened is None or "simple key" not in (exc.context or ""):
        return None
    text = lines[opened.line].strip() if opened.line < len(lines) else ""
    return Explained(f"line {opened.line + 1} (`{text}`) is neither `key: value` nor a list "
                     "item", opened.line + 1, opened.column + 1,
                     "add `: ` after the key, or quote the text if it is a value")


def _unexpected_line(exc: yaml.MarkedYAMLError, lines: list[str]) -> Explained | None:
    """A line the enclosing block mapping does not expect (a list item among its keys, a key
    indented less than its siblings)."""
    opened, mark = exc.context_mark, exc.problem_mark
    if opened is None or mark is None or "block mapping" not in (exc.context or ""):
        return None
    text = lines[mark.line].strip() if mark.line < len(lines) else ""
    what = "a list item" if text.startswith("-") else f"`{text}`"
    return Explained(
        f"line {mark.line + 1} holds {what} where the mapping that starts at line "
        f"{opened.line + 1} expects a key at column {opened.column + 1}",
        mark.line + 1, mark.column + 1,
        "indent it under the key it belongs to (a list is the value of a key), or line it up "
        "with its sibling keys")


_READERS: list[Callable[[yaml.MarkedYAMLError, list[str]], Explained | None]] = [
    _unclosed_quote, _unclosed_flow, _key_without_colon, _unexpected_line,
]


def explain(exc: yaml.MarkedYAMLError, text: str) -> Explained:
    """The syntax error `exc` of `text`, in words, at the mistake's line and column."""
    found = _recognised(exc, text.splitlines())
    if found is not None:
        return Explained(f"invalid YAML: {found.message}", found.line, found.column, found.hint)
    mark = exc.problem_mark or exc.context_mark
    first = (str(exc.problem or exc).splitlines() or [""])[0]
    return Explained(f"invalid YAML: {first}", mark.line + 1 if mark else 0,
                     mark.column + 1 if mark else 0)


def _recognised(exc: yaml.MarkedYAMLError, lines: list[str]) -> Explained | None:
    """The usual mistake `exc` comes from, said by the first reader that knows it; None when
    none does."""
    if "mapping values are not allowed" in (exc.problem or ""):
        found = _mapping_value(exc, lines)
        if found is not None:
            return found
    for reader in _READERS:
        found = reader(exc, lines)
        if found is not None:
            return found
    return None
