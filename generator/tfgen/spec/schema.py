"""JSON Schema validation of specs and of tfgen.yaml, in words a data scientist understands.

The schemas in `schemas/` are the single source of truth. Each validator is compiled once per
process. Every schema error of a document is collected (never only the first) and turned into a
`Problem` at the line and column of the offending node, with a JSON pointer and a plain message:
unknown keys get a did-you-mean, enums list the allowed values, patterns are explained by the
rule they encode, type errors say what was expected (and to quote numbers that must be text).
Most documents are valid, so each is first checked by the compiled `jsonschema_rs` validator (a
few microseconds); only a document it rejects goes through the Python `jsonschema` validator,
whose errors carry what the messages need. `apply_defaults` fills in every `default` the schema
declares.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from ..problems import Problem
from .config import copy_data, load_schema
from .loader import Document, Locator, PointerParts, pointer_text

if TYPE_CHECKING:  # the Python validator is imported only when a document has errors
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

EXPERIMENT_SCHEMA = "experiment.schema.json"

NAME_RULE = (
    "must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and "
    "ending with a letter or digit, at most 51 characters so that <name>-tensorboard and "
    "<name>-evaluator-0 fit Kubernetes' 63-character limit"
)

# Each pattern in the schemas, said in words. tests/test_schema.py checks none is missing.
PATTERN_WORDS: dict[str, str] = {
    "^[a-z]([-a-z0-9]*[a-z0-9])?$": NAME_RULE,
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": (
        "must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with "
        "a letter or digit"
    ),
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": (
        "must be a Kubernetes object name: lowercase letters, digits, '-' and '.', starting and "
        "ending with a letter or digit"
    ),
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$": (
        "must be empty or a Kubernetes object name: lowercase letters, digits, '-' and '.', "
        "starting and ending with a letter or digit"
    ),
    "^/": "must be an absolute path, starting with '/'",
    "^(/.*)?$": "must be empty or an absolute path, starting with '/'",
    "^([0-9]+(\\.[0-9]+)?|\\.[0-9]+|[0-9]+m)$": (
        'must be a CPU quantity: cores such as "4" or "0.5", or millicores such as "500m"'
    ),
    "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$": (
        'must be a size such as "8Gi", "512Mi" or "100Gi" (binary suffixes Ki, Mi, Gi, Ti; '
        "note: Gi, not GB)"
    ),
    "^[-._a-zA-Z][-._a-zA-Z0-9]*$": (
        "must be an environment variable name: letters, digits, '_', '-' and '.', not starting "
        "with a digit"
    ),
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$": (
        "must be a Kubernetes label/annotation key: an optional DNS prefix and '/', then at most "
        "63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    ),
    "^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$": (
        "must be a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting "
        "and ending with a letter or digit"
    ),
    "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": (
        "must be a host name: lowercase letters, digits, '-' and '.'"
    ),
    "^((\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$": (
        "must be empty or a host name: lowercase letters, digits, '-' and '.'"
    ),
    "^[0-7]{3,4}$": 'must be octal permission bits such as "755"',
    "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$": (
        "must be an extended resource name such as nvidia.com/gpu"
    ),
    "^1\\.[0-9]{2}$": 'must be a Kubernetes minor version such as "1.30" (quoted)',
}

# Keys refused by a dedicated rule (rules.py); the generic "unknown key" would hide the reason.
RULE_OWNED_KEYS = frozenset({"ttlSecondsAfterFinished"})


@cache
def inlined_schema(name: str = EXPERIMENT_SCHEMA) -> dict[str, Any]:
    """schemas/<name> with every local `$ref` replaced by its target (the schemas are not
    recursive). Validating against it skips reference lookups, the largest cost per file.
    The schema itself is checked against its meta-schema when `fast_validator` compiles it."""
    schema = load_schema(name)

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            node = _resolve(node, schema)
            return {k: inline(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    result: dict[str, Any] = inline(schema)
    return result


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
    return jsonschema_rs.Draft202012Validator(load_schema(name))


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
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_lean(inlined_schema(name)))


def _annotated(err: ValidationError, name: str) -> dict[str, Any]:
    """The full (annotated) subschema an error's keyword belongs to."""
    node: Any = inlined_schema(name)
    for part in list(err.absolute_schema_path)[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return err.schema if isinstance(err.schema, dict) else {}
    return node if isinstance(node, dict) else {}


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """A subschema with a local `$ref` folded in (siblings win, as in 2020-12 annotations)."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    merged = dict(_resolve(target, root))
    merged.update({k: v for k, v in schema.items() if k != "$ref"})
    return merged


_NO_DEFAULT = object()


@dataclass(frozen=True)
class _Defaults:
    """Where a schema declares defaults, without the subschemas that declare none: filling a
    spec visits only these (a few dozen places) instead of every property of the schema."""

    # (property, its default or _NO_DEFAULT, defaults further down or None), schema order
    properties: tuple[tuple[str, Any, _Defaults | None], ...]
    names: frozenset[str]  # every declared property: additionalProperties covers the others
    additional: _Defaults | None
    items: _Defaults | None


def _defaults_of(schema: dict[str, Any]) -> _Defaults | None:
    props: dict[str, Any] = schema.get("properties", {})
    found = []
    for name, sub in props.items():
        inner = _defaults_of(sub)
        if "default" in sub or inner is not None:
            found.append((name, sub.get("default", _NO_DEFAULT), inner))
    extra = schema.get("additionalProperties")
    additional = _defaults_of(extra) if isinstance(extra, dict) else None
    items = _defaults_of(schema["items"]) if isinstance(schema.get("items"), dict) else None
    if not found and additional is None and items is None:
        return None
    return _Defaults(tuple(found), frozenset(props), additional, items)


@cache
def _defaults(name: str) -> _Defaults | None:
    return _defaults_of(inlined_schema(name))


def _fill(instance: Any, plan: _Defaults) -> None:
    if isinstance(instance, dict):
        for name, default, inner in plan.properties:
            if name not in instance:
                if default is _NO_DEFAULT:
                    continue
                # Only containers need a copy; each spec must own its lists and mappings.
                instance[name] = (
                    copy_data(default) if isinstance(default, (dict, list)) else default
                )
            if inner is not None:
                _fill(instance[name], inner)
        extra = plan.additional
        if extra is not None:
            for name, value in instance.items():
                if name not in plan.names:
                    _fill(value, extra)
    elif isinstance(instance, list) and plan.items is not None:
        for item in instance:
            _fill(item, plan.items)


def apply_defaults(
    data: dict[str, Any], name: str = EXPERIMENT_SCHEMA, *, in_place: bool = False
) -> dict[str, Any]:
    """`data` (a deep copy unless `in_place`) with every schema `default` filled in where absent.

    Defaults inside an optional object apply only once that object exists (or has a default
    itself); values of the wrong type are left alone for the schema errors to report.
    """
    out = data if in_place else copy.deepcopy(data)
    plan = _defaults(name)
    if plan is not None:
        _fill(out, plan)
    return out


# ---------------------------------------------------------------------------------------------
# Error translation


def _describe(value: Any) -> str:
    if value is None:
        return "empty (no value)"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f'the text "{value}"'
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_TYPE_WORDS = {
    "string": "text (a string)",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "a mapping (key: value)",
    "array": "a list",
    "null": "empty",
}


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _first_sentence(text: str) -> str:
    # Hints are printed in parentheses already; drop the description's own asides.
    plain = re.sub(r"\s*\([^)]*\)", "", text)
    return re.split(r"(?<=[a-z0-9])\. ", plain)[0].strip().rstrip(".")


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    options = sorted(set(choices))
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered:
        return f'did you mean "{lowered[word.lower()]}"? Case matters'
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
        close = [lowered[c] for c in close]
    if close:
        return f'did you mean "{close[0]}"?'
    return "allowed: " + ", ".join(options)


class _Translator:
    """Builds Problems for one document's schema errors."""

    def __init__(self, locator: Locator, schema_name: str) -> None:
        self.locator = locator
        self.schema_name = schema_name
        self.problems: dict[tuple[str, str], Problem] = {}
        # "must be one of 3, 4.0" next to "must be text, not the number 3" is noise: the type
        # problem says it all, so value checks at a wrongly typed pointer are dropped.
        self.wrong_type: set[str] = set()
        self.value_checks: set[tuple[str, str]] = set()

    def add(
        self,
        parts: PointerParts,
        message: str,
        hint: str = "",
        *,
        key: bool = False,
        kind: str = "",
    ) -> None:
        path, line, col, from_config = self.locator.where(parts, key=key, missing=kind == "missing")
        if from_config:
            hint = "; ".join(x for x in (hint, "this value comes from tfgen.yaml defaults") if x)
        pointer = pointer_text(parts)
        if kind == "type":
            self.wrong_type.add(pointer)
        elif kind == "value":
            self.value_checks.add((pointer, message))
        self.problems.setdefault(
            (pointer, message), Problem(path, line, col, pointer, message, hint)
        )

    def result(self) -> list[Problem]:
        """The problems, without enum/pattern complaints about a value of the wrong type."""
        return [
            problem
            for key, problem in self.problems.items()
            if not (key in self.value_checks and key[0] in self.wrong_type)
        ]

    def error(self, err: ValidationError) -> None:
        parts: PointerParts = tuple(err.absolute_path)
        kind = err.validator
        value: Any = err.validator_value
        schema = _annotated(err, self.schema_name)
        instance: Any = err.instance
        described = _first_sentence(str(schema.get("description", "")))

        if "propertyNames" in err.absolute_schema_path:
            words = PATTERN_WORDS.get(str(value), f"must match {value}")
            self.add(
                (*parts, str(instance)), f'key "{instance}" is not valid: it {words}', key=True
            )
        elif kind == "additionalProperties" and isinstance(instance, dict):
            allowed = list(schema.get("properties", {}))
            for name in instance:
                if name in allowed or name in RULE_OWNED_KEYS:
                    continue
                hint = _did_you_mean(name, allowed) if allowed else "this mapping takes no keys"
                self.add((*parts, name), f'unknown key "{name}"', hint, key=True)
        elif kind == "required" and isinstance(instance, dict):
            props = schema.get("properties", {})
            for name in value:
                if name not in instance:
                    sub = props.get(name, {})
                    hint = _first_sentence(str(sub.get("description", "")))
                    self.add(
                        parts, f'missing required key "{name}"', hint, key=True, kind="missing"
                    )
        elif kind == "const":
            want = f'"{value}"' if isinstance(value, str) else _yaml_scalar(value)
            self.add(parts, f"must be {want}, not {_describe(instance)}", described, kind="value")
        elif kind == "enum":
            choices = ", ".join(_yaml_scalar(v) or '""' for v in value)
            hint = ""
            if isinstance(instance, str):
                hint = _did_you_mean(instance, [str(v) for v in value if v])
                if hint.startswith("allowed"):
                    hint = ""
            self.add(
                parts, f"must be one of {choices}; got {_describe(instance)}", hint, kind="value"
            )
        elif kind == "type":
            self.type_error(parts, value, instance)
        elif kind == "pattern":
            words = PATTERN_WORDS.get(str(value), f"must match the pattern {value}")
            self.add(parts, f'"{instance}" is not valid: it {words}', kind="value")
        elif kind == "maxLength":
            if parts == ("metadata", "name"):
                self.add(
                    parts,
                    f'"{instance}" is {len(instance)} characters long; a name {NAME_RULE}',
                    "choose a shorter name",
                )
            else:
                self.add(parts, f"is {len(instance)} characters long; at most {value} allowed")
        elif kind == "minLength":
            self.add(parts, "must not be empty", described)
        elif kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            words = {
                "minimum": "at least",
                "maximum": "at most",
                "exclusiveMinimum": "more than",
                "exclusiveMaximum": "less than",
            }[kind]
            self.add(parts, f"must be {words} {value}, not {_yaml_scalar(instance)}", described)
        elif kind == "minProperties":
            keys = ", ".join(schema.get("properties", {}))
            self.add(
                parts,
                "must not be empty",
                f"add at least one of: {keys}",
                key=True,
                kind="missing",
            )
        elif kind == "minItems":
            self.add(parts, f"needs at least {value} item{'s' if value != 1 else ''}", key=True)
        elif kind == "uniqueItems":
            self.add(parts, "has duplicate items; each may appear only once", key=True)
        elif kind in ("oneOf", "anyOf") and isinstance(instance, dict) and _only_required(value):
            options = [branch["required"][0] for branch in value]
            present = [c for c in options if c in instance]
            if not present:
                self.add(
                    parts,
                    "needs one of " + ", ".join(f'"{c}"' for c in options),
                    key=True,
                    kind="missing",
                )
            else:
                both = " and ".join(f'"{c}"' for c in present)
                self.add(parts, f"has {both}; use exactly one of them", key=True)
        elif kind in ("oneOf", "anyOf") and err.context:
            from jsonschema.exceptions import best_match

            self.error(best_match(err.context))
        else:
            self.add(parts, err.message)

    def type_error(self, parts: PointerParts, expected: Any, instance: Any) -> None:
        kinds = [expected] if isinstance(expected, str) else list(expected)
        want = " or ".join(_TYPE_WORDS.get(k, k) for k in kinds)
        hint = ""
        if "string" in kinds and isinstance(instance, (int, float, bool)):
            hint = f'put it in quotes: "{_yaml_scalar(instance)}"'
        elif instance is None:
            hint = "the key has no value; fill it in or remove the key"
        elif "array" in kinds and not isinstance(instance, list):
            hint = "write a list, e.g. [a, b] or one '- item' per line"
        self.add(parts, f"must be {want}, not {_describe(instance)}", hint, kind="type")


def _only_required(branches: Any) -> bool:
    return isinstance(branches, list) and all(
        isinstance(b, dict) and list(b) == ["required"] and len(b["required"]) == 1
        for b in branches
    )


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
    if is_valid(data, name):
        return []
    translator = _Translator(Locator(document, config), name)
    for err in validator(name).iter_errors(data):
        translator.error(err)
    return translator.result()
