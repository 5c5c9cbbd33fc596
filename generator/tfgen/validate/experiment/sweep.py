"""Sweeps: one spec, many runs. The expansion of `spec.sweep` into runs, and the placeholders
each run fills in (what a sweep may not do: `rules/sweep`).

A run is one combination of the parameters' values (grid: the cartesian product in the order
the parameters are written, the last varying fastest; zip: the i-th value of each list). Its
TFJob is `<name>-<suffix>` (`naming.job_name`). The suffix is read from the values when every
value is short lowercase text or a number ("0.01" and "64" give `0p01-64`): a person finds the
run in `kubectl get tfjobs` and in TensorBoard by what it tries, and adding a value to any list
leaves every existing run's name, and so its live TFJob, alone. When a value cannot be part of
a name (upper case, '-', '_', long), every run is `r0`, `r1`, ... in run order instead: one
rule for the whole sweep, never a mix that could collide.

Placeholders are `((name))`: Helm and Argo CD templates use `{{ }}`, the shell `$x` and `${x}`,
Kubernetes expands `$(VAR)` in args, and Python's `%(x)s` is common in training scripts; a
double parenthesis around a name, without `$`, means nothing to any of them (the shell's
arithmetic `$((i + 1))` is no placeholder). tfgen replaces them when it writes
the values, so Helm only ever sees literal text. They are allowed in `args` and `env[].value`,
at spec level and per role; `((run.name))` is the run's TFJob name and `((run.logDir))` its
own directory under `tensorboard.logDir` (`<logDir>/<suffix>`), which TensorBoard lists under
the suffix.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from ...errors import OptionsError
from ...repo import naming, resources
from ...repo.resources import EXPERIMENT_SCHEMA
from ..schema.defaults import copy_data
from ..schema.validator import python_pattern
from ..yaml.document import PointerParts
from .checked import lookup

# `((name))`, a name or run.<field>; `$((...))` is the shell's arithmetic, left alone.
PLACEHOLDER = re.compile(r"(?<!\$)\(\(\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)\)")
RUN_NAME = "run.name"
RUN_LOG_DIR = "run.logDir"
BUILTINS = (RUN_NAME, RUN_LOG_DIR)
MAX_SUFFIX = 16  # a value-derived suffix longer than this gives way to r0, r1, ...
_TOKEN = re.compile(r"^[a-z0-9.]+$")


@dataclass(frozen=True)
class Run:
    """One run of a sweep: its position, its TFJob suffix ("" for a spec without sweep) and
    its parameter values in the parameters' order."""

    index: int
    suffix: str
    values: tuple[tuple[str, Any], ...] = ()

    def label(self) -> str:
        """`lr=0.1, batch=64`: how messages and explain name the run's values."""
        return ", ".join(f"{name}={_one_line_text(value_text(value))}"
                         for name, value in self.values)


def _one_line_text(text: str) -> str:
    # a value with a line break is refused, and said on one line (JSON-quoted) while it is
    return text if one_line().match(text) else json.dumps(text)


def value_text(value: Any) -> str:
    """A parameter value as it is substituted: strings as written, numbers in their shortest
    form (what YAML and JSON write)."""
    return value if isinstance(value, str) else repr(value)


def parameters(spec: dict[str, Any]) -> dict[str, list[Any]]:
    """The sweep's parameters that list values, with their values ({} without a sweep)."""
    params = lookup(spec, "sweep", "parameters")
    if not isinstance(params, dict):
        return {}
    return {k: v for k, v in params.items() if isinstance(v, list)}


def _combinations(spec: dict[str, Any]) -> list[tuple[tuple[str, Any], ...]]:
    params = parameters(spec)
    names = list(params)
    if lookup(spec, "sweep", "combine") == "zip":
        rows = list(zip(*params.values(), strict=False))
    else:
        rows = list(itertools.product(*params.values()))
    return [tuple(zip(names, row, strict=True)) for row in rows]


def run_count(spec: dict[str, Any]) -> int:
    """How many runs the spec makes, counted without making them (a hostile grid of huge
    lists must cost nothing before the limit refuses it)."""
    if not has_sweep(spec):
        return 1
    lengths = [len(values) for values in parameters(spec).values()]
    if lookup(spec, "sweep", "combine") == "zip":
        return min(lengths, default=0)
    return math.prod(lengths)


def _suffixes(combos: list[tuple[tuple[str, Any], ...]]) -> list[str]:
    tokens = [[value_text(v) for _, v in combo] for combo in combos]
    named = ["-".join(t.replace(".", "p") for t in row) for row in tokens]
    return named if _readable(tokens, named) else [f"r{i}" for i in range(len(combos))]


def _readable(tokens: list[list[str]], named: list[str]) -> bool:
    """Whether the suffixes read from the values (`named`, from their `tokens`) may name the
    runs: lowercase text and numbers, short, no two alike and none that tfgen reserves."""
    if not all(_TOKEN.match(t) for row in tokens for t in row):
        return False
    if not all(len(s) <= MAX_SUFFIX for s in named):
        return False
    return len(set(named)) == len(named) and not set(named) & set(naming.RESERVED_SUFFIXES)


def has_sweep(spec: dict[str, Any]) -> bool:
    return isinstance(spec.get("sweep"), dict)


def runs(spec: dict[str, Any]) -> list[Run]:
    """The runs of a (validated) spec, in order; a spec without sweep is one run, no suffix."""
    if not has_sweep(spec):
        return [Run(0, "")]
    combos = _combinations(spec)
    return [Run(i, s, c) for i, (s, c) in enumerate(zip(_suffixes(combos), combos, strict=True))]


def find_run(spec: dict[str, Any], suffix: str) -> Run | None:
    return next((run for run in runs(spec) if run.suffix == suffix), None)


def select(spec: dict[str, Any], suffix: str | None, *, one: bool = False) -> list[Run]:
    """The runs a command works on: the one `--run SUFFIX` names, else all of them (`one`: a
    command that runs a single TFJob, which a sweep of several runs must be told)."""
    every = runs(spec)
    listed = ", ".join(r.suffix for r in every)
    if suffix is None:
        if one and len(every) > 1:
            raise OptionsError(f"this sweep has {len(every)} runs: choose one with --run "
                               f"SUFFIX ({listed})")
        return every
    if not has_sweep(spec):
        raise OptionsError(f"--run {suffix}: this experiment has no sweep, so no runs to choose")
    chosen = [r for r in every if r.suffix == suffix]
    if not chosen:
        raise OptionsError(f"--run {suffix}: no such run; the sweep's runs are {listed}")
    return chosen


def log_dir(spec: dict[str, Any], run: Run) -> str | None:
    """The run's own event-file directory, `<tensorboard.logDir>/<suffix>` (None without one)."""
    base = lookup(spec, "tensorboard", "logDir")
    return run_log_dir(base, run) if isinstance(base, str) else None


def run_log_dir(base: str, run: Run) -> str:
    """`<base>/<suffix>`: each run's event files in a directory of their own."""
    return f"{base.rstrip('/')}/{run.suffix}" if run.suffix else base


def bindings(spec: dict[str, Any], name: str, run: Run) -> dict[str, str]:
    """What each placeholder of a run stands for."""
    out = {key: value_text(value) for key, value in run.values}
    out[RUN_NAME] = naming.job_name(name, run.suffix)
    logs = log_dir(spec, run)
    if logs is not None:
        out[RUN_LOG_DIR] = logs
    return out


def substitute(text: str, values: dict[str, str]) -> str:
    """Every placeholder naming a binding replaced by its value, once (a value that contains
    `((x))` stays literal); others left as written."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def placeholder_fields(spec: dict[str, Any]) -> Iterator[tuple[PointerParts, str]]:
    """(pointer into the document, text) of every field that takes placeholders."""
    scopes: list[tuple[PointerParts, Any]] = [(("spec",), spec)]
    roles = spec.get("roles")
    if isinstance(roles, dict):
        scopes += [(("spec", "roles", r), role) for r, role in roles.items()]
    for base, scope in scopes:
        if isinstance(scope, dict):
            yield from _scope_fields(base, scope)


def _scope_fields(base: PointerParts, scope: dict[str, Any]) -> Iterator[tuple[PointerParts, str]]:
    """The args and env values of one scope that takes placeholders: the spec, or a role."""
    args = scope.get("args")
    for i, arg in enumerate(args if isinstance(args, list) else []):
        if isinstance(arg, str):
            yield (*base, "args", i), arg
    env = scope.get("env")
    for i, entry in enumerate(env if isinstance(env, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("value"), str):
            yield (*base, "env", i, "value"), entry["value"]


def run_spec(spec: dict[str, Any], name: str, run: Run) -> dict[str, Any]:
    """The spec one run trains with: placeholders replaced, no `sweep`."""
    out = copy_data(spec)
    out.pop("sweep", None)
    values = bindings(spec, name, run)
    for parts, text in placeholder_fields(spec):
        node: Any = out
        for key in parts[1:-1]:
            node = node[key]
        node[parts[-1]] = substitute(text, values)
    return out


def string_fields(node: Any, parts: PointerParts = ()) -> Iterator[tuple[PointerParts, str]]:
    """Every string in `node`, with where it is (its path below `parts`)."""
    if isinstance(node, str):
        yield parts, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from string_fields(value, (*parts, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from string_fields(value, (*parts, i))


@cache
def one_line() -> re.Pattern[str]:
    """The schema's single-line rule (its one home is the schema's `line` definition)."""
    return python_pattern(resources.schema(EXPERIMENT_SCHEMA)["$defs"]["line"]["pattern"])
