"""A change between a started object and its new rendering, field by field: the innermost
fields that differ (`leaf_changes`), a field that is not there (`ABSENT`), values whole in
words (`full`, `change_text`), and what a runtime says of a change to its started job
(`LiveChange`). The runtimes judge their jobs' changes with these; the gate judges the storage
with them too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ABSENT = object()  # a field not there
# At most this many changes are said of one object's part (a role, the rest): a chart or
# tfgen.yaml change can touch every field; the first ones are enough to find it.
PER_PART = 5


@dataclass(frozen=True, eq=False)  # each one itself: its values may be lists
class LiveChange:
    """A change a started job cannot take: where (a JSON pointer into the job), the sentence
    that explains it, the field's old and new value (ABSENT: not there), why, and the role
    (replica type) it is said of, None for the job's other fields."""

    pointer: str
    message: str
    old: Any
    new: Any
    why: str
    role: str | None = None


def full(value: Any) -> str:
    """A value whole, as JSON writes it (never cut: the difference may be at its end)."""
    return "(absent)" if value is ABSENT else json.dumps(value, ensure_ascii=False)


def change_text(old: Any, new: Any) -> str:
    return f"{full(old)} -> {full(new)}"


def as_stored(value: Any) -> Any:
    """A rendered value in the form the API server stores it, for telling whether a change
    changes anything: a number as its decimal string (a quantity such as a GPU count is
    stored as "1" whether written 1 or "1"), an empty mapping as absent (an empty metadata is
    what a webhook writes, and what the server holds, either way)."""
    if isinstance(value, dict):
        kept = {key: as_stored(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item != {}}
    if isinstance(value, list):
        return [as_stored(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def aligned(old: Any, new: Any) -> Any:
    """`new` with every part that the server stores as it stores `old`'s taken from `old`: a
    tfgen upgrade that writes a quantity as a string, or an empty field a webhook writes
    anyway, is no change to a started run."""
    if as_stored(old) == as_stored(new):
        return old
    if isinstance(old, dict) and isinstance(new, dict):
        return {key: aligned(old[key], item) if key in old else item
                for key, item in new.items()
                if key in old or as_stored(item) != {}}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [aligned(a, b) for a, b in zip(old, new, strict=True)]
    return new


def changed_keys(old: dict[str, Any], new: dict[str, Any], mutable: set[str]) -> list[str]:
    """The keys whose values differ, but those a live object takes."""
    keys = (set(old) | set(new)) - mutable
    return sorted(k for k in keys if old.get(k) != new.get(k))


def leaf_changes(old: Any, new: Any, pointer: str, limit: int | None = PER_PART
                 ) -> list[tuple[str, Any, Any]]:
    """(pointer, old, new) for the innermost fields that differ, so a message names
    `$.spec.csi.volumeAttributes.path` rather than the whole volume source."""
    out: list[tuple[str, Any, Any]] = []
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key, ABSENT), new.get(key, ABSENT)
            if a != b:
                out += leaf_changes(a, b, f"{pointer}.{key}", limit)
    elif _same_shaped_lists(old, new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                out += leaf_changes(a, b, f"{pointer}[{index}]", limit)
    else:
        out.append((pointer, old, new))
    return out[:limit]


def _same_shaped_lists(old: Any, new: Any) -> bool:
    """Two lists of one length whose items are mappings or lists: compared item by item (a
    list of plain values is one field)."""
    if not (isinstance(old, list) and isinstance(new, list)) or len(old) != len(new):
        return False
    return any(isinstance(item, (dict, list)) for item in old)
