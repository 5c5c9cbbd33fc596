"""Defaults: those the schema declares, and tfgen.yaml's `defaults` block under every spec.

`apply_defaults` fills in every `default` the schema declares; it visits only the places the
schema declares defaults in. `merge_defaults` lays a spec over the repository's defaults (the
spec wins, mappings merge, lists are replaced whole).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cache
from typing import Any

from ...repo import naming
from ...repo.resources import EXPERIMENT_SCHEMA
from .validator import inlined_schema


def copy_data(value: Any) -> Any:
    """A deep copy of loaded YAML data (mappings, lists, scalars); much cheaper than
    `copy.deepcopy`, which it falls back to for anything else."""
    if isinstance(value, dict):
        return {key: copy_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_data(item) for item in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    return copy.deepcopy(value)


# Keys that are alternatives: when a spec sets one of them, a default for another is dropped
# (a repo-wide NAS default must not collide with a spec's existingClaim).
EXCLUSIVE: dict[tuple[str, ...], tuple[str, ...]] = {
    ("spec", "storage"): ("nas", "existingClaim"),
    ("spec", "roles"): naming.LEADER_ROLES,
}


def merge_defaults(
    defaults: dict[str, Any],
    spec: dict[str, Any],
    _at: tuple[str, ...] = (),
    *,
    own_spec: bool = False,
) -> dict[str, Any]:
    """Deep merge: `spec` wins; mappings merge key by key; lists and scalars are replaced.

    Keys keep the spec's order, defaults-only keys follow. See EXCLUSIVE for alternatives.
    The result shares nothing with `defaults`, nor with `spec` unless `own_spec`: then the
    spec's lists and mappings are taken over as they are (for a caller that just loaded the
    spec and hands it over).
    """
    out: dict[str, Any] = {}
    for key, value in spec.items():
        base = defaults.get(key)
        # dict, not Mapping: loaded data holds no other mappings, and a check against the
        # ABC is a call into Python for every value of every spec.
        if isinstance(value, dict) and isinstance(base, dict):
            out[key] = merge_defaults(base, value, (*_at, key), own_spec=own_spec)
        elif own_spec or not isinstance(value, (dict, list)):
            out[key] = value
        else:
            out[key] = copy_data(value)
    skip = _ruled_out(spec, _at)
    for key, value in defaults.items():
        if key not in out and key not in skip:
            out[key] = copy_data(value)
    return out


def _ruled_out(spec: dict[str, Any], at: tuple[str, ...]) -> set[str]:
    """The keys whose defaults the spec's own choice among alternatives drops (EXCLUSIVE)."""
    group = EXCLUSIVE.get(at, ())
    if any(k in spec for k in group):
        return set(group)
    return set()


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
        _fill_mapping(instance, plan)
    elif isinstance(instance, list) and plan.items is not None:
        for item in instance:
            _fill(item, plan.items)


def _fill_mapping(instance: dict[str, Any], plan: _Defaults) -> None:
    for name, default, inner in plan.properties:
        if name not in instance:
            if default is _NO_DEFAULT:
                continue
            # Only containers need a copy; each spec must own its lists and mappings.
            instance[name] = copy_data(default) if isinstance(default, (dict, list)) else default
        if inner is not None:
            _fill(instance[name], inner)
    extra = plan.additional
    if extra is not None:
        for name, value in instance.items():
            if name not in plan.names:
                _fill(value, extra)


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


def object_defaults(*path: str) -> dict[str, Any]:
    """What the schema's defaults make of an empty object at `path` in a spec document, e.g.
    `("spec", "storage", "nas")`: the values of a block that is absent."""
    document: dict[str, Any] = {}
    node = document
    for key in path:
        node = node.setdefault(key, {})
    filled: Any = apply_defaults(document, in_place=True)
    for key in path:
        filled = filled[key]
    result: dict[str, Any] = filled
    return result
