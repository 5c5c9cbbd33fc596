"""One experiment as the rules see it (`Checked`), and what every rule uses to read it and
to report (`lookup`, `roles`, `Collector`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...problems import Problem
from ...repo import chart
from ..yaml.document import Document, Locator, PointerParts
from ..yaml.loader import load_bytes

# What the rules across files read of an experiment (unique names and volumes, log
# directories, object names, GPU quotas: across/, policy/team.quota_problems and what its
# holds_quota reads), as paths into its data ("*": every key of a mapping). A remembered
# verdict brings back these parts only: ten thousand whole specs cost more to recall than to
# judge.
ACROSS_FILES: tuple[tuple[str, ...], ...] = (
    ("metadata", "name"), ("metadata", "namespace"),
    ("spec", "lifecycle"), ("spec", "runPolicy", "suspend"), ("spec", "queue"), ("spec", "sweep"),
    ("spec", "storage"), ("spec", "tensorboard", "logDir"), ("spec", "tensorboard", "enabled"),
    ("spec", "roles", "*", "replicas"), ("spec", "roles", "*", "gpus"),
)


def _tree(paths: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """Paths as a tree of their keys, so that one walk takes them all (a leaf is `{}`)."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for key in path:
            node = node.setdefault(key, {})
    return tree


_ACROSS_FILES_TREE = _tree(ACROSS_FILES)


def across_files(data: dict[str, Any]) -> dict[str, Any]:
    """The parts of `data` that ACROSS_FILES names, each in its place (shared, not copied)."""
    out: dict[str, Any] = {}
    _take(data, out, _ACROSS_FILES_TREE)
    return out


def _take(source: dict[str, Any], target: dict[str, Any], tree: dict[str, Any]) -> None:
    for head, rest in tree.items():
        for key in (list(source) if head == "*" else [head] if head in source else []):
            value = source[key]
            if rest and isinstance(value, dict):
                _take(value, target.setdefault(key, {}), rest)
            else:  # the end of the path, or a value a rule cannot look into either
                target[key] = value


@dataclass
class Checked:
    """One loaded experiment as the rules see it: complete data, where it came from.

    The locator of a file whose verdict was recalled (not checked in this run) is built from
    its bytes (`raw`, else read by `read`) when a rule across files first needs to point
    into it. A recalled file's `data` holds only what the rules across files read
    (`across_files`); `load` gives its complete data.
    """

    source: Path
    shown: str
    data: dict[str, Any]
    raw: bytes = b""
    config: Document | None = None
    _locator: Locator | None = field(default=None, repr=False)
    read: Callable[[], bytes] | None = field(default=None, repr=False)
    load: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)
    values_digest: str | None = None  # as `Experiment.values_digest`

    @functools.cached_property
    def text(self) -> str:
        """`data` as JSON, made on first use: one pass in C over every key and string, for a
        rule's quick look at whether a word occurs at all (it is not there in most specs, and
        JSON escapes no letter, digit or parenthesis) before it walks the data for where."""
        return json.dumps(self.data, default=str)

    @property
    def locator(self) -> Locator:
        if self._locator is None:
            raw = self.raw or (self.read() if self.read else b"")
            self._locator = Locator(load_bytes(raw, self.shown), self.config)
        return self._locator


def lookup(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def spec_is_retired(data: Any) -> bool:
    """Whether an experiment document is retired (spec.lifecycle): it keeps its volume and
    claim and runs nothing, so it holds no GPUs and writes no logs."""
    return lookup(data, "spec", "lifecycle") == chart.RETIRED


class Collector:
    def __init__(self, locator: Locator) -> None:
        self.locator = locator
        self.problems: list[Problem] = []

    def add(
        self,
        parts: PointerParts,
        message: str,
        hint: str = "",
        *,
        key: bool = True,
        missing: bool = False,
    ) -> None:
        self.problems.append(self.locator.problem(parts, message, hint, key=key, missing=missing))


def roles(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    roles = spec.get("roles")
    if not isinstance(roles, dict):
        return []
    return [(name, role) for name, role in roles.items() if isinstance(role, dict)]
