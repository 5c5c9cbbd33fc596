"""Schema errors in words a data scientist understands.

Each `jsonschema` error becomes a `Problem` at the line and column of the offending node, with
a JSON pointer and a plain message: unknown keys get a did-you-mean, enums list the allowed
values, patterns are explained by the rule they encode, type errors say what was expected (and
to quote numbers that must be text).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ...problems import Problem
from ...repo import images, naming
from ...words import counted
from ..yaml.document import Locator, PointerParts, pointer_text
from .patterns import IMAGE_REFERENCE, ONE_LINE, PATTERN_WORDS

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

# Keys refused by a dedicated rule (`rules/spec.py`); the generic "unknown key" would hide the
# reason.
RULE_OWNED_KEYS = frozenset({"ttlSecondsAfterFinished"})


def _annotated(err: ValidationError, schema: dict[str, Any]) -> dict[str, Any]:
    """The full (annotated) subschema an error's keyword belongs to."""
    node: Any = schema
    for part in list(err.absolute_schema_path)[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return err.schema if isinstance(err.schema, dict) else {}
    return node if isinstance(node, dict) else {}


_INVISIBLE = {0x2028: "\\u2028", 0x2029: "\\u2029", **{c: f"\\x{c:02x}" for c in range(0x7F, 0xA0)}}


def shown(text: str, limit: int = 80, *, quoted: bool = True) -> str:
    """A value for a one-line message, in double quotes unless `quoted` is False: control
    characters and line separators escaped (a message must never span lines or carry what it
    reports), long values cut."""
    escaped = json.dumps(text, ensure_ascii=False)[1:-1].translate(_INVISIBLE)
    if len(escaped) > limit:
        escaped = escaped[: limit - 3] + "..."
    return f'"{escaped}"' if quoted else escaped


def _describe(value: Any) -> str:
    if value is None:
        return "empty (no value)"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {shown(value)}"
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


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice `word` is most likely a misspelling of (the same but for case first), if any
    is close enough."""
    options = sorted(set(choices))
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
        close = [lowered[c] for c in close]
    return close[0] if close else None


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    found = closest(word, choices)
    if found is None:
        return "allowed: " + ", ".join(sorted(set(choices)))
    if found.lower() == word.lower():
        return f'did you mean "{found}"? Case matters'
    return f'did you mean "{found}"?'


def _image_words(text: str, grammar: str) -> str:
    """What makes `text` no image reference, at its character (the grammar only when the
    parser finds nothing: the two are held to agree by tests/test_images.py)."""
    try:
        images.parse(text)
    except images.ImageError as exc:
        return f"is not an image reference: {exc.message}"
    return grammar


class Translator:
    """Builds Problems for one document's schema errors."""

    def __init__(self, locator: Locator, schema: dict[str, Any]) -> None:
        self.locator = locator
        self.schema = schema  # the inlined schema with its annotations (descriptions)
        self.problems: dict[tuple[str, str], Problem] = {}
        # "must be one of 3, 4.0" next to "must be text, not the number 3" is noise: the type
        # problem says it all, so value checks at a wrongly typed pointer are dropped.
        self.wrong_type: set[str] = set()
        self.value_checks: set[tuple[str, str]] = set()
        # A value with a line break also breaks its field's own grammar; the line break is the
        # one thing to fix, so the grammar's complaint is dropped.
        self.multi_line: set[str] = set()
        # Unknown keys that are close to a key their mapping takes (`tensorbord`): (the
        # mapping's parts, the key as written, the key meant).
        self.misspelt: list[tuple[PointerParts, str, str]] = []

    def add(
        self,
        parts: PointerParts,
        message: str,
        hint: str = "",
        *,
        key: bool = False,
        kind: str = "",
    ) -> None:
        pointer = pointer_text(parts)
        if kind == "type":
            self.wrong_type.add(pointer)
        elif kind == "value":
            self.value_checks.add((pointer, message))
        if (pointer, message) not in self.problems:
            self.problems[(pointer, message)] = self.locator.problem(
                parts, message, hint, key=key, missing=kind == "missing"
            )

    def result(self) -> list[Problem]:
        """The problems, without enum/pattern complaints about a value of the wrong type or
        grammar complaints about a value that is not one line."""
        return [
            problem
            for key, problem in self.problems.items()
            if not (key in self.value_checks and key[0] in self.wrong_type)
            and not (key in self.value_checks and key[0] in self.multi_line
                     and not key[1].endswith(PATTERN_WORDS[ONE_LINE]))
        ]

    def error(self, err: ValidationError) -> None:
        """Add the problem(s) one schema error stands for: a key its mapping's rule for keys
        refuses, else in the words `_IN_WORDS` has for the keyword, else jsonschema's own."""
        if "propertyNames" in err.absolute_schema_path:
            self._bad_key(err)
        else:
            _IN_WORDS.get(str(err.validator), Translator._as_is)(self, err)

    def _as_is(self, err: ValidationError) -> None:
        self.add(tuple(err.absolute_path), err.message)

    def _described(self, err: ValidationError) -> str:
        """The first sentence of the description next to the failed keyword, as a hint."""
        return _first_sentence(str(_annotated(err, self.schema).get("description", "")))

    # Keys and items: unknown, missing, alternatives, duplicates.

    def _bad_key(self, err: ValidationError) -> None:
        value: Any = err.validator_value
        words = PATTERN_WORDS.get(str(value), f"must match {value}")
        name = str(err.instance)
        self.add(
            (*err.absolute_path, name), f"key {shown(name)} is not valid: it {words}", key=True
        )

    def _unknown_keys(self, err: ValidationError) -> None:
        if not isinstance(err.instance, dict):
            self._as_is(err)
            return
        parts: PointerParts = tuple(err.absolute_path)
        allowed = list(_annotated(err, self.schema).get("properties", {}))
        for name in err.instance:
            if name in allowed or name in RULE_OWNED_KEYS:
                continue
            hint = _did_you_mean(name, allowed) if allowed else "this mapping takes no keys"
            self.add((*parts, name), f'unknown key "{name}"', hint, key=True)
            meant = closest(name, allowed)
            if meant is not None:
                self.misspelt.append((parts, name, meant))

    def _missing_keys(self, err: ValidationError) -> None:
        if not isinstance(err.instance, dict):
            self._as_is(err)
            return
        parts: PointerParts = tuple(err.absolute_path)
        props = _annotated(err, self.schema).get("properties", {})
        required: Any = err.validator_value
        for name in required:
            if name not in err.instance:
                hint = _first_sentence(str(props.get(name, {}).get("description", "")))
                self.add(parts, f'missing required key "{name}"', hint, key=True, kind="missing")

    def _empty_mapping(self, err: ValidationError) -> None:
        keys = ", ".join(_annotated(err, self.schema).get("properties", {}))
        self.add(
            tuple(err.absolute_path),
            "must not be empty",
            f"add at least one of: {keys}",
            key=True,
            kind="missing",
        )

    def _too_few_items(self, err: ValidationError) -> None:
        least: Any = err.validator_value
        self.add(tuple(err.absolute_path), f"needs at least {counted(least, 'item')}", key=True)

    def _duplicate_items(self, err: ValidationError) -> None:
        self.add(
            tuple(err.absolute_path), "has duplicate items; each may appear only once", key=True
        )

    def _alternatives(self, err: ValidationError) -> None:
        """oneOf/anyOf: keys that exclude one another, else the branch that fits best."""
        branches: Any = err.validator_value
        if isinstance(err.instance, dict) and _only_required(branches):
            options = [branch["required"][0] for branch in branches]
            self._one_key_of(tuple(err.absolute_path), options, err.instance)
        elif err.context:
            from jsonschema.exceptions import best_match

            self.error(best_match(err.context))
        else:
            self._as_is(err)

    def _one_key_of(
        self, parts: PointerParts, options: list[str], instance: dict[str, Any]
    ) -> None:
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

    # One value: of the wrong type, outside its choices, pattern or bounds.

    def _not_const(self, err: ValidationError) -> None:
        value: Any = err.validator_value
        want = f'"{value}"' if isinstance(value, str) else _yaml_scalar(value)
        self.add(
            tuple(err.absolute_path),
            f"must be {want}, not {_describe(err.instance)}",
            self._described(err),
            kind="value",
        )

    def _not_a_choice(self, err: ValidationError) -> None:
        value: Any = err.validator_value
        instance: Any = err.instance
        choices = ", ".join(_yaml_scalar(v) or '""' for v in value)
        self.add(
            tuple(err.absolute_path),
            f"must be one of {choices}; got {_describe(instance)}",
            _choice_hint(instance, value),
            kind="value",
        )

    def _wrong_type(self, err: ValidationError) -> None:
        self.type_error(tuple(err.absolute_path), err.validator_value, err.instance)

    def _no_match(self, err: ValidationError) -> None:
        parts: PointerParts = tuple(err.absolute_path)
        value: Any = err.validator_value
        words = PATTERN_WORDS.get(str(value), f"must match the pattern {value}")
        if value == ONE_LINE:
            self.multi_line.add(pointer_text(parts))
        instance: Any = err.instance
        if value == IMAGE_REFERENCE:
            words = _image_words(str(instance), words)
        self.add(parts, f"{shown(instance)} is not valid: it {words}", kind="value")

    def _too_long(self, err: ValidationError) -> None:
        parts: PointerParts = tuple(err.absolute_path)
        instance: Any = err.instance
        if parts == ("metadata", "name"):
            self.add(
                parts,
                f'"{instance}" is {len(instance)} characters long; a name {naming.NAME_RULE}',
                "choose a shorter name",
            )
        else:
            allowed = err.validator_value
            self.add(parts, f"is {len(instance)} characters long; at most {allowed} allowed")

    def _empty_text(self, err: ValidationError) -> None:
        self.add(tuple(err.absolute_path), "must not be empty", self._described(err))

    def _out_of_bounds(self, err: ValidationError) -> None:
        words = _BOUND_WORDS[str(err.validator)]
        self.add(
            tuple(err.absolute_path),
            f"must be {words} {err.validator_value}, not {_yaml_scalar(err.instance)}",
            self._described(err),
        )

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


def _choice_hint(instance: Any, choices: list[Any]) -> str:
    """A did-you-mean for text close to one of an enum's choices, else nothing (the message
    lists them all already)."""
    if not isinstance(instance, str):
        return ""
    hint = _did_you_mean(instance, [str(v) for v in choices if v])
    return "" if hint.startswith("allowed") else hint


_BOUND_WORDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}

# The schema keywords whose errors tfgen says in its own words, and the Translator method that
# says each; any other keyword's error keeps jsonschema's message.
_IN_WORDS: dict[str, Callable[[Translator, ValidationError], None]] = {
    "additionalProperties": Translator._unknown_keys,
    "required": Translator._missing_keys,
    "minProperties": Translator._empty_mapping,
    "minItems": Translator._too_few_items,
    "uniqueItems": Translator._duplicate_items,
    "oneOf": Translator._alternatives,
    "anyOf": Translator._alternatives,
    "const": Translator._not_const,
    "enum": Translator._not_a_choice,
    "type": Translator._wrong_type,
    "pattern": Translator._no_match,
    "maxLength": Translator._too_long,
    "minLength": Translator._empty_text,
    **dict.fromkeys(_BOUND_WORDS, Translator._out_of_bounds),
}


def _only_required(branches: Any) -> bool:
    return isinstance(branches, list) and all(
        isinstance(b, dict) and list(b) == ["required"] and len(b["required"]) == 1
        for b in branches
    )


