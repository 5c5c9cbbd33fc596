"""JSON Schema validation of specs and of tfgen.yaml.

The schemas tfgen ships (`repo.resources`) are the single source of truth. Each validator is
compiled once per process. Most documents are valid, so each is first checked by the compiled
`jsonschema_rs` validator (a few microseconds); only a document it rejects goes through the
Python `jsonschema` validator, whose errors carry what the messages need (`messages`). Every
error of a document is reported, never only the first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from ...problems import Problem
from ...repo import resources
from ...repo.resources import EXPERIMENT_SCHEMA
from ..yaml.document import Document, Locator, PointerParts
from .messages import Translator

if TYPE_CHECKING:  # the Python validator is imported only when a document has errors
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError


@cache
def inlined_schema(name: str = EXPERIMENT_SCHEMA) -> dict[str, Any]:
    """schemas/<name> with every local `$ref` replaced by its target (the schemas are not
    recursive) and every `allOf` of object definitions folded into one (`_folded`).
    Validating against it skips reference lookups, the largest cost per file, and its errors
    point at one subschema per object, the one holding the object's properties.
    The schema itself is checked against its meta-schema when `fast_validator` compiles it."""
    schema = resources.schema(name)

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            node = _resolve(node, schema)
            return _folded({k: inline(v) for k, v in node.items() if k not in _SOURCE_ONLY})
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    result: dict[str, Any] = inline(schema)
    return result


# What only people editing a schema file read: its definitions (inlined where referenced) and
# its comments.
_SOURCE_ONLY = frozenset({"$defs", "$comment"})

ANNOTATIONS = frozenset(
    {"description", "examples", "default", "title", "$comment", "$id", "$schema"}
)


def _lean(node: Any, *, names: bool = False) -> Any:
    """The schema without annotation keywords; `names` marks a `properties` mapping, whose
    keys are property names (a property may be called "default")."""
    if isinstance(node, dict):
        if names:
            return {k: _lean(v) for k, v in node.items()}
        return {
            k: _lean(v, names=k == "properties") for k, v in node.items() if k not in ANNOTATIONS
        }
    if isinstance(node, list):
        return [_lean(v) for v in node]
    return node


@cache
def fast_validator(name: str = EXPERIMENT_SCHEMA) -> jsonschema_rs.Validator:
    """schemas/<name> compiled by jsonschema_rs, once per process: the yes/no check every
    document gets first. Compiling validates the schema against the 2020-12 meta-schema (a
    broken schema raises here, before any spec is judged by it)."""
    return jsonschema_rs.Draft202012Validator(resources.schema(name))


def is_valid(data: Any, name: str = EXPERIMENT_SCHEMA) -> bool:
    """True when `data` certainly satisfies schemas/<name>.

    False means "ask the Python validator": jsonschema_rs is stricter in corners (a `$` in a
    pattern does not match before a trailing newline, NaN is no number, text must encode as
    UTF-8), and there the Python validator's verdict is the one reported.
    """
    try:
        return bool(fast_validator(name).is_valid(data))
    except Exception:  # values JSON cannot hold (lone surrogates, ...): let Python judge
        return False


@cache
def validator(name: str = EXPERIMENT_SCHEMA) -> Draft202012Validator:
    """The Python validator of schemas/<name>, for documents `is_valid` rejects; built once.

    It validates against the inlined schema without annotations: jsonschema visits every
    keyword of every subschema, and descriptions/examples make up most of them. Messages look
    the annotations up in the full schema (`_annotated`).
    """
    from jsonschema import Draft202012Validator, validators

    # The schemas' patterns are ECMA-262 regular expressions, where `$` is the end of the text.
    # Python's `$` also matches before a final newline, so "volcano\n" would pass
    # `^[a-z]+$`: the Python validator gets a `pattern` keyword with ECMA semantics.
    ecma = validators.extend(Draft202012Validator, {"pattern": _pattern_keyword})
    return ecma(_lean(inlined_schema(name)))


@cache
def python_pattern(pattern: str) -> re.Pattern[str]:
    """An ECMA-262 schema pattern as a Python regular expression: every `$` outside a
    character class becomes `\\Z` (the end of the text, not also before a final newline)."""
    out: list[str] = []
    in_class = escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append(r"\Z")
            continue
        out.append(char)
    return re.compile("".join(out))


def _pattern_keyword(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if isinstance(instance, str) and not python_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """A subschema with a local `$ref` folded in.

    Annotations of the referring schema win (its description is the one to show). An assertion
    both define must hold twice, as in 2020-12: `{"$ref": "#/$defs/line", "pattern": "^/"}`
    keeps the field's pattern and moves the reference's into `allOf`, never dropping one.
    """
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    merged = dict(_resolve(target, root))
    shadowed: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            continue
        if key in merged and key not in ANNOTATIONS and merged[key] != value:
            shadowed[key] = merged[key]
        merged[key] = value
    if shadowed:
        merged["allOf"] = [*merged.get("allOf", []), shadowed]
    return merged


def _folded(node: dict[str, Any]) -> dict[str, Any]:
    """`node` with its `allOf` merged into it, when one schema says the same.

    A role is the shared `role` definition refined by its own replicas
    (`allOf: [{properties: {replicas: ...}}, {$ref: role}]`); folded, it is one closed object
    again, so an unknown key is reported with the role's keys for a did-you-mean, and a bound
    next to its role's description. Each branch is laid over the ones after it, so the first
    branch's annotations win (editors show the first description too), and the node's own
    over all. An `allOf` that one schema cannot say (two different values for a keyword, an
    `additionalProperties` that the other branches' properties would widen) is kept as it is.
    """
    branches = node.get("allOf")
    if not isinstance(branches, list) or not _objects(*branches):
        return node
    own = {k: v for k, v in node.items() if k != "allOf"}
    merged: dict[str, Any] | None = {}
    for branch in (*reversed(branches), own):
        merged = _conjoin(branch, merged) if merged is not None else None
    return merged if merged is not None else node


def _conjoin(top: dict[str, Any], base: dict[str, Any]) -> dict[str, Any] | None:
    """One schema that holds when both do, or None: `top`'s annotations win, keys keep `base`'s
    order, properties defined by both are conjoined in turn."""
    merged = dict(base)
    for key, value in top.items():
        if key not in merged or key in ANNOTATIONS:
            merged[key] = value
        elif key == "properties" and isinstance(value, dict):
            properties = _conjoined_properties(value, merged[key])
            if properties is None:
                return None
            merged[key] = properties
        elif key == "required":
            merged[key] = list(dict.fromkeys([*merged[key], *value]))
        elif merged[key] != value:
            return None
    return merged if _closed_alike(merged, top, base) else None


def _conjoined_properties(top: dict[str, Any], base: dict[str, Any]) -> dict[str, Any] | None:
    """The properties of two schemas conjoined, or None when one of them cannot be."""
    properties = dict(base)
    for name, sub in top.items():
        both = sub
        if name in properties:
            both = _conjoin(sub, properties[name]) if _objects(sub, properties[name]) else None
        if both is None:
            return None
        properties[name] = both
    return properties


def _closed_alike(merged: dict[str, Any], *sides: dict[str, Any]) -> bool:
    """Whether merging kept what each side lets through: a side that closes its object
    (`additionalProperties`) named every property the merged one has, and none uses a keyword
    whose meaning another side's properties would change."""
    names = set(merged.get("properties", {}))
    for side in sides:
        if "patternProperties" in side or "unevaluatedProperties" in side:
            return False
        if "additionalProperties" in side and set(side.get("properties", {})) != names:
            return False
    return True


def _objects(*schemas: Any) -> bool:
    return all(isinstance(schema, dict) for schema in schemas)


def schema_problems(
    document: Document,
    data: Any,
    name: str = EXPERIMENT_SCHEMA,
    config: Document | None = None,
) -> list[Problem]:
    """Every schema error of `data` (the document's data, possibly merged with repo defaults).

    `config`, when given, is the tfgen.yaml document the defaults came from, so that an error
    in a merged default is reported where it was written.
    """
    return schema_check(document, data, name, config).problems


@dataclass(frozen=True)
class SchemaCheck:
    """The schema's problems of one document, and the unknown keys close to a key their
    mapping takes: (the mapping's parts, the key as written, the key meant)."""

    problems: list[Problem]
    misspelt: list[tuple[PointerParts, str, str]]


def schema_check(document: Document, data: Any, name: str = EXPERIMENT_SCHEMA,
                 config: Document | None = None) -> SchemaCheck:
    """`schema_problems`, with the misspelt keys among them."""
    if is_valid(data, name):
        return SchemaCheck([], [])
    translator = Translator(Locator(document, config), inlined_schema(name))
    for err in validator(name).iter_errors(data):
        translator.error(err)
    return SchemaCheck(translator.result(), translator.misspelt)
