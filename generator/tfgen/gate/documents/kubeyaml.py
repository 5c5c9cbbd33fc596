"""Reading a Kubernetes document as Kubernetes reads it: go-yaml v2, duplicate keys refused.

Kubernetes, Helm and Argo CD decode YAML with go-yaml v2 (under sigs.k8s.io/yaml), which
follows YAML 1.1 but not to the letter. Rendered manifests, the committed ApplicationSet and
the manifests `tfgen import` reads are read so. yaml_rs, a Rust parser, reads manifests 7.5x
faster than PyYAML's C loader, by YAML 1.2's rules; a document holding a form it reads
otherwise than go-yaml (found by the scan below) is read by PyYAML made to read as go-yaml does
(`StrictLoader`). tests/test_manifests.py holds both to helm's own reading, through `fromYaml`.
The files helm itself reads (a chart's values.yaml and Chart.yaml, a values file) are read by
the same rules with duplicate keys taken, the last one winning, as helm takes them
(`GoYamlLoader`, through `gate/helm/values.load_yaml_file`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
import yaml_rs

from ...repo.yamlread import SafeLoader


class GoYamlLoader(SafeLoader):  # type: ignore[misc]
    """PyYAML reading YAML as go-yaml v2 under sigs.k8s.io/yaml does (Helm's values and
    Chart.yaml, Kubernetes' decoder), where PyYAML's own YAML 1.1 differs: a plain y, Y, n or N
    a boolean, and a plain scalar that starts like a number read by go-yaml's rules
    (`_go_number`: 1e3 and 0o17 numbers, 60:30 and dates text). A duplicate key is taken, the
    last one winning, as Helm takes it."""

    bool_values = {**SafeLoader.bool_values, "y": True, "n": False}

    def resolve(self, kind: Any, value: str, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0] and value[:1] in _NUMBER_START:
            number = _go_number(value)
            return _STR_TAG if number is None else _NUMBER_TAGS[type(number)]
        return str(super().resolve(kind, value, implicit))


class StrictLoader(GoYamlLoader):
    """A Kubernetes document read as Kubernetes' strict decoding reads it: go-yaml v2's
    scalars (`GoYamlLoader`), duplicate keys refused (yaml_rs refuses them too)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate mapping key: {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_STR_TAG = "tag:yaml.org,2002:str"
_NUMBER_TAGS = {int: "tag:yaml.org,2002:int", float: "tag:yaml.org,2002:float"}
_NUMBER_START = tuple("+-.0123456789")
# go-yaml v2's float syntax, and its named floats
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_GO_NAMED = {
    **{f"{sign}.{name}": float(f"{sign or '+'}inf") for sign in ("", "+", "-")
       for name in ("inf", "Inf", "INF")},
    **{f".{name}": float("nan") for name in ("nan", "NaN", "NAN")},
}


def _go_number(text: str) -> int | float | None:
    """What go-yaml v2 makes of a plain scalar starting with a sign, a dot or a digit: Go's
    base-prefixed integer (0x, 0o, 0b, a leading 0 for octal) of 64 bits, else a float of its
    float syntax, underscores dropped first (not after a leading dot); None for a string (a
    date is one: go-yaml v2 gives it as text)."""
    if text in _GO_NAMED:
        return _GO_NAMED[text]
    if not text.isascii():
        return None
    if text.startswith("."):
        return float(text) if _GO_FLOAT.fullmatch(text) else None
    plain = text.replace("_", "")
    value = _go_int(plain)
    if value is not None:
        return value
    return float(plain) if _GO_FLOAT.fullmatch(plain) else None


def _go_int(plain: str) -> int | None:
    """`plain` as Go's base-prefixed integer (0x, 0o, 0b, a leading 0 for octal), when it is
    one of 64 bits; else None."""
    digits = plain.lstrip("+-")
    octal = len(digits) > 1 and digits[0] == "0" and digits.isdigit()
    try:
        value = int(plain, 8 if octal else 0)
    except ValueError:
        return None
    return value if -2**63 <= value < 2**64 else None


def _construct_number(loader: GoYamlLoader, node: Any) -> int | float | str:
    number = _go_number(str(loader.construct_scalar(node)))
    return str(node.value) if number is None else number


GoYamlLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"),
                                   list("yYnN"))
for _tag in _NUMBER_TAGS.values():
    GoYamlLoader.add_constructor(_tag, _construct_number)


# Plain scalars go-yaml v2 reads otherwise than yaml_rs (YAML 1.2): yes/no/on/off/y/n words as
# booleans, 0755 as octal; a document holding one, or a merge key, is read by StrictLoader. A
# cheap scan finds them at a line's start (a key, or a value alone on its line), after `: ` or
# `- `, or after `[`, `{`, `,` (spaced or not). A line of a block scalar or of a multi-line plain
# scalar that looks like one sends its document to StrictLoader too: slower, read the same. So
# does a tab anywhere: YAML 1.1 takes one as a separator where the scan looks for a space
# (`key: <tab>yes` is true there), and yaml_rs refuses some that go-yaml reads.
# The lookahead first: most places hold none of the characters a token starts with, and one
# look at a set of them refuses such a place faster than trying each word in turn.
_TOKEN = (r"(?=[-+0yYnNoO])(?:[-+]?0[0-7_]+|[yYnN]|[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF)"
          r"(?= *(?:$|[,\]}#:]))")
# One pattern per place, each starting with literal text: Python's re finds those several
# times faster than a pattern starting with a set of characters (or `^`); the indentation is
# taken whole (`*+`), not given back space by space when no token follows.
_PLACES = (re.compile(": " + _TOKEN, re.MULTILINE), re.compile("- " + _TOKEN, re.MULTILINE),
           re.compile("\n *+" + _TOKEN, re.MULTILINE))
_FIRST_LINE = re.compile(" *+" + _TOKEN, re.MULTILINE)
_IN_FLOW = tuple(re.compile(re.escape(opening) + " ?" + _TOKEN, re.MULTILINE)
                 for opening in "[,{")


# One document's bounds, as the other readers of input have theirs: a Kubernetes object nests
# a few dozen levels at most, and go-yaml itself refuses "excessive aliasing" (a billion laughs,
# whose aliases StrictLoader would keep shared, then expanded by whatever walks the data).
MAX_DEPTH = 100
MAX_VALUES = 1_000_000
# a line whose indentation and `- ` or `? ` indicators could open MAX_DEPTH levels
_DEEP_LINE = re.compile(f"\\n[ ?-]{{{MAX_DEPTH}}}")
_DEEP_FIRST_LINE = re.compile(f"[ ?-]{{{MAX_DEPTH}}}")


def _for_strict_loader(chunk: str) -> bool:
    """Whether yaml_rs may read `chunk` otherwise than go-yaml (above), or it may nest deeper
    than MAX_DEPTH: a line whose indentation and indicators could open that many levels, or
    more than half as many flow collections (yaml_rs crashes the process on a hundred thousand
    levels; StrictLoader counts them and refuses too many in words)."""
    # `<` alone first: one character is searched for many times faster than two, and few
    # manifests hold one
    if ("<" in chunk and "<<" in chunk) or "\t" in chunk or _FIRST_LINE.match(chunk):
        return True
    flow = "[" in chunk or "{" in chunk
    if _may_nest_too_deep(chunk, flow):
        return True
    places = (*_PLACES, *_IN_FLOW) if flow else _PLACES
    return any(place.search(chunk) for place in places)


def _may_nest_too_deep(chunk: str, flow: bool) -> bool:
    """Whether `chunk` holds more than MAX_DEPTH // 2 flow collections (`flow`: it holds any),
    or a line whose indentation and indicators could open MAX_DEPTH levels."""
    if flow and chunk.count("[") + chunk.count("{") > MAX_DEPTH // 2:
        return True
    return bool(_DEEP_FIRST_LINE.match(chunk) or _DEEP_LINE.search(chunk))


def load_document(chunk: str) -> Any:
    """One YAML document as Kubernetes reads it (go-yaml v2); ValueError or yaml.YAMLError
    when it is not valid YAML (duplicate keys included: Kubernetes' strict decoding refuses
    them), nests deeper than MAX_DEPTH or holds more than MAX_VALUES values once its aliases
    and merge keys are expanded."""
    if not _for_strict_loader(chunk):
        try:
            return yaml_rs.loads(chunk, parse_datetime=False)
        except yaml_rs.YAMLDecodeError as exc:
            # duplicate keys and syntax errors: Kubernetes' strict decoding refuses them too
            raise ValueError(str(exc)) from exc
    loader = StrictLoader(chunk)
    try:
        node = loader.get_single_node()
        if node is not None and expanded_size(node) > MAX_VALUES:
            raise ValueError(f"more than {MAX_VALUES:,} values once its aliases and merge keys "
                             "are expanded")
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


# yaml_rs's error: where, the line drawn with a caret below it, then what is wrong
_YAML_RS_WHERE = re.compile(r"YAML parse error at (line \d+, column \d+)")


def reading_problem(exc: Exception) -> str:
    """What `load_document` refused, in one line: the problem and its line (PyYAML's first line
    says only where it was, `while increasing block level`; yaml_rs's says where, draws the
    line, then says what)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        return f"{exc.problem} (line {mark.line + 1})" if mark else str(exc.problem)
    lines = str(exc).splitlines()
    where = _YAML_RS_WHERE.fullmatch(lines[0]) if lines else None
    if where and len(lines) > 1:
        return f"{lines[-1]} ({where[1]})"
    return lines[0] if lines else type(exc).__name__


def expanded_size(node: Any) -> int:
    """How many values a composed YAML node holds once its aliases and merge keys are
    expanded, as a constructor would build them; ValueError past MAX_DEPTH levels (a node that
    holds itself through an alias included). Counted in time linear in the nodes: a billion
    laughs is measured, not expanded."""
    return expansion(node)[0]


def expansion(node: Any, known: Mapping[int, int] | None = None) -> tuple[int, dict[int, int]]:
    """`expanded_size(node)` and the size of every distinct node it walked, by id: as many
    entries as the text holds nodes, so the difference is what aliases repeat. Nodes in
    `known` (sizes measured before, of nodes still alive: anchors of the same document) are
    not walked again, so an alias of an earlier anchor costs nothing to measure."""
    sizes: dict[int, int] = {}
    return _expanded(node, sizes, 0, known or {}), sizes


def _expanded(node: Any, sizes: dict[int, int], depth: int, known: Mapping[int, int]) -> int:
    """How many values `node` holds with every alias expanded, each shared node counted once
    per use but worked out once (`sizes`, by node); ValueError past MAX_DEPTH levels (a node
    that holds itself through an alias included)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep (or an alias holds itself)")
    size = sizes.get(id(node))
    if size is None:
        size = known.get(id(node))
    if size is not None:
        return size
    if isinstance(node, yaml.SequenceNode):
        total = 1 + sum(_expanded(item, sizes, depth + 1, known) for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        total = 1 + sum(_expanded(key, sizes, depth + 1, known)
                        + _expanded(value, sizes, depth + 1, known) for key, value in node.value)
    else:
        total = 1
    sizes[id(node)] = total
    return total
