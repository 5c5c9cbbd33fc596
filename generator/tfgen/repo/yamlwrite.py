"""The one YAML writer: every file tfgen writes (generated values and wiring, imported and new
specs, probe charts) comes out of `dump_yaml`, block style, no line wrapping, keys in the
order they were built, so the same data gives the same bytes on every run. It sits below the
stages so that the validate stage can measure what render will write before anything is
written (`validate/rules/valuesfile.py`), the generated files' header included.

The files are read by YAML parsers that resolve plain scalars differently: tfgen's own (yaml_rs
and PyYAML), and go-yaml v2 under `sigs.k8s.io/yaml` with YAML 1.1 rules (Helm's `--values`, the
ApplicationSet's git files generator), where `y`, `n`, `on`, `1e3`, `0o17`, `08` and `1_000`
are booleans and numbers (and PyYAML's YAML 1.1 takes `60:30` for one, go-yaml v2 for text).
Rather than model three resolvers, a string is written plain only under a rule simple enough to
check by eye: it starts with an ASCII letter or `/`, holds only letters, digits and
`._/@:=+,~-`, does not end with `:`, and is not a YAML 1.1 boolean or null word in any letter
case. No resolver reads such a scalar as anything but a string (every number, date, special
float and merge key starts with a digit, a sign, `.`, `~` or `<`). Everything else is a JSON
string, which is a valid double-quoted YAML scalar, with the characters YAML forbids or folds
escaped. tests/test_yaml_types.py proves this with the real helm.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

_PLAIN = re.compile(r"[A-Za-z/][A-Za-z0-9._/@:=+,~-]*")
# YAML 1.1 booleans (go-yaml v2 adds y/n to PyYAML's list) and nulls, compared lower-cased.
_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})
# JSON leaves these raw, but YAML forbids (C1, DEL, non-characters, surrogates) or folds
# (NEL, U+2028/9, BOM) them: escaped.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def is_plain(value: str) -> bool:
    """True when `value` may be written unquoted: every YAML reader takes it as this string."""
    return (
        _PLAIN.fullmatch(value) is not None
        and not value.endswith(":")
        and value.lower() not in _WORDS
    )


def quoted(value: str) -> str:
    """`value` as a double-quoted YAML scalar: JSON, with what YAML forbids or folds escaped."""
    text = json.dumps(value, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@lru_cache(maxsize=65536)
def _scalar_str(value: str) -> str:
    return value if is_plain(value) else quoted(value)


def _float(value: float) -> str:
    # Read as a float by all three: PyYAML wants a dot and a signed exponent (`1.0e-05`),
    # go-yaml v2 accepts that too; repr() gives the shortest exact digits.
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    mantissa, _, exponent = repr(value).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if not exponent:
        return mantissa
    return f"{mantissa}e{exponent if exponent[0] in '+-' else '+' + exponent}"


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _scalar_str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    raise TypeError(f"cannot write {type(value).__name__} as YAML")


def _emit(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, dict) and value:
        _emit_mapping(value, indent, indent, out)
    elif isinstance(value, list) and value:
        _emit_sequence(value, indent, indent, out)
    else:
        out.append(indent + _inline(value))


# Block style only; empty collections inline as {} / []. Sequences are indented under their
# key, like kubectl and most hand-written Kubernetes YAML. `first` is what the first line
# starts with instead of `indent`: the "- " of a list item that is itself a collection.


def _emit_mapping(value: dict[Any, Any], indent: str, first: str, out: list[str]) -> None:
    lead = first
    inner = indent + "  "
    for key, item in value.items():
        label = f"{lead}{_scalar_str(key if type(key) is str else str(key))}:"
        lead = indent
        if isinstance(item, str):
            out.append(f"{label} {_scalar_str(item)}")
        elif isinstance(item, dict) and item:
            out.append(label)
            _emit_mapping(item, inner, inner, out)
        elif isinstance(item, list) and item:
            out.append(label)
            _emit_sequence(item, inner, inner, out)
        else:
            out.append(f"{label} {_inline(item)}")


def _emit_sequence(value: list[Any], indent: str, first: str, out: list[str]) -> None:
    lead = first
    inner = indent + "  "
    for item in value:
        marker = lead + "- "
        lead = indent
        if isinstance(item, str):
            out.append(marker + _scalar_str(item))
        elif isinstance(item, dict) and item:
            _emit_mapping(item, inner, marker, out)
        elif isinstance(item, list) and item:
            _emit_sequence(item, inner, marker, out)
        else:
            out.append(marker + _inline(item))


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump_yaml(data: Any) -> str:
    """Stable YAML: insertion order kept (callers build dicts in a fixed order), no wrapping.

    A small block-style emitter for the plain data tfgen writes (maps, lists, strings,
    numbers, booleans, null): ~20x faster than PyYAML's representer, and its output is
    pinned by tfgen rather than by a library version. Round-trip tests keep it honest.
    """
    out: list[str] = []
    _emit(data, "", out)
    return "\n".join(out) + "\n"


# Every generated file opens with these three comment lines (render/generated.py says why).
HEADER_MARK = "# Generated by tfgen. DO NOT EDIT."
REGENERATE_COMMAND = "tfgen render"


# A source name shown as-is in the header; any other is JSON-quoted with every non-ASCII
# character escaped, so no newline, line separator or control character ends the comment.
_PLAIN_SOURCE = re.compile(r"[A-Za-z0-9._/@+=-]+")


def _source(name: str) -> str:
    return name if _PLAIN_SOURCE.fullmatch(name) else json.dumps(name, ensure_ascii=True)


def header(sources: Sequence[str]) -> str:
    """The header block naming the source file(s) and the regenerating command."""
    return (
        f"{HEADER_MARK}\n"
        f"# Source: {', '.join(_source(s) for s in sources)}\n"
        f"# Regenerate: {REGENERATE_COMMAND}\n"
    )
