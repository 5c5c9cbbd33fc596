"""Sweeps: one spec, many runs. The expansion of `spec.sweep` into runs, the placeholders each
run fills in, and every problem a sweep can have.

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
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from ...errors import OptionsError
from ...problems import Problem
from ...repo import naming, resources
from ...repo.resources import EXPERIMENT_SCHEMA
from ..schema.defaults import copy_data
from ..schema.messages import closest
from ..schema.validator import python_pattern, schema_problems
from ..yaml.document import PointerParts, pointer_text
from .checked import Checked, Collector, lookup

# `((name))`, a name or run.<field>; `$((...))` is the shell's arithmetic, left alone.
PLACEHOLDER = re.compile(r"(?<!\$)\(\(\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)\)")
RUN_NAME = "run.name"
RUN_LOG_DIR = "run.logDir"
BUILTINS = (RUN_NAME, RUN_LOG_DIR)
MAX_SUFFIX = 16  # a value-derived suffix longer than this gives way to r0, r1, ...
_TOKEN = re.compile(r"^[a-z0-9.]+$")
_WHERE = "placeholders are replaced only in args and env values, at spec level or per role"


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
    return text if _one_line().match(text) else json.dumps(text)


def value_text(value: Any) -> str:
    """A parameter value as it is substituted: strings as written, numbers in their shortest
    form (what YAML and JSON write)."""
    return value if isinstance(value, str) else repr(value)


def _parameters(spec: dict[str, Any]) -> dict[str, list[Any]]:
    params = lookup(spec, "sweep", "parameters")
    if not isinstance(params, dict):
        return {}
    return {k: v for k, v in params.items() if isinstance(v, list)}


def _combinations(spec: dict[str, Any]) -> list[tuple[tuple[str, Any], ...]]:
    params = _parameters(spec)
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
    lengths = [len(values) for values in _parameters(spec).values()]
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


def _strings(node: Any, parts: PointerParts = ()) -> Iterator[tuple[PointerParts, str]]:
    if isinstance(node, str):
        yield parts, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*parts, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, (*parts, i))


@cache
def _one_line() -> re.Pattern[str]:
    # The schema's single-line rule, its one home.
    return python_pattern(resources.schema(EXPERIMENT_SCHEMA)["$defs"]["line"]["pattern"])


def sweep_problems(checked: Checked, max_runs: int, *, each_run: bool = True) -> list[Problem]:
    """Every problem of one spec's sweep and placeholders; `max_runs` is tfgen.yaml's
    `sweep.maxRuns`. `each_run` False leaves out judging each run's substituted fields (a
    sweep whose values file is too large to write is not built run by run)."""
    data, spec = checked.data, checked.data.get("spec")
    if not isinstance(spec, dict):
        return []
    if not has_sweep(spec) and "((" not in checked.text:
        # No sweep and no `((` in any string: nothing to say. (The walk below costs more than
        # the rest of the spec's rules.)
        return []
    out = Collector(checked.locator)
    fields = dict(placeholder_fields(spec))
    _check_misplaced(data, fields, out)
    used = [(parts, m.group(1)) for parts, text in fields.items()
            for m in PLACEHOLDER.finditer(text)]
    if not has_sweep(spec):
        for parts, name in used:
            out.add(parts, f"placeholder (({name})) but the spec has no sweep",
                    "add spec.sweep with this parameter, or write the value itself", key=False)
        return out.problems
    shaped = _sweep_shape(spec, max_runs, out)
    if lookup(spec, "sweep", "parameters") != {}:  # (else no name could match: one cause)
        # said beside a bad shape: the names need no runs, and a typo is a problem of its own
        _check_names(spec, used, out)
    if shaped:
        _placeholders(checked, out, each_run)
    return out.problems


def _check_misplaced(data: dict[str, Any], fields: dict[PointerParts, str],
                     out: Collector) -> None:
    """A placeholder in a field that takes none (`fields` take them) would stay as written."""
    for parts, text in _strings(data):
        if parts in fields:
            continue
        if parts[:2] != ("spec", "sweep") and (found := PLACEHOLDER.search(text)):
            out.add(parts, f"placeholder {found.group(0)} in a field that takes none", _WHERE,
                    key=False)


def _sweep_shape(spec: dict[str, Any], max_runs: int, out: Collector) -> bool:
    """The parameters, their combination and the run count; False when runs cannot be made."""
    params = _parameters(spec)
    where = ("spec", "sweep", "parameters")
    if lookup(spec, "sweep", "parameters") == {}:
        out.add(where, "the sweep has no parameters: it would make no run",
                "name at least one parameter with its values, or remove spec.sweep")
        return False
    ok = True
    for name, values in params.items():
        if not _check_values((*where, name), name, values, out):
            ok = False
    if not _check_zip_lengths(spec, params, out):
        ok = False
    count = run_count(spec)
    if ok and count > max_runs:
        out.add(("spec", "sweep"), f"the sweep makes {count} runs, more than the limit of "
                f"{max_runs}", "remove values, or raise sweep.maxRuns in tfgen.yaml")
        ok = False
    return ok


def _check_values(parts: PointerParts, name: str, values: list[Any], out: Collector) -> bool:
    """One parameter lists at least one value, each once: False when it does not."""
    ok = True
    if not values:
        out.add(parts, f"parameter {name} has no values: the sweep would make no run",
                "list at least one value")
        ok = False
    counts = Counter(value_text(v) for v in values)
    twice = sorted(text for text, n in counts.items() if n > 1)
    if twice:
        out.add(parts, f"parameter {name} lists {', '.join(twice)} more than once: "
                "two runs would be the same", "list each value once")
        ok = False
    return ok


def _check_zip_lengths(spec: dict[str, Any], params: dict[str, list[Any]],
                       out: Collector) -> bool:
    """A zip of lists of different lengths would drop values: False when it would."""
    lengths = {name: len(values) for name, values in params.items()}
    if lookup(spec, "sweep", "combine") == "zip" and len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        out.add(("spec", "sweep", "combine"),
                f"combine: zip takes the i-th value of every list, but the lists differ in "
                f"length: {listed}", "give every list the same length, or use combine: grid")
        return False
    return True


def _placeholders(checked: Checked, out: Collector, each_run: bool) -> None:
    spec, name = checked.data["spec"], str(lookup(checked.data, "metadata", "name"))
    logs = lookup(spec, "tensorboard", "logDir")
    if isinstance(logs, str) and "," in logs:
        out.add(("spec", "tensorboard", "logDir"),
                "a sweep's TensorBoard lists its runs as name:path separated by ',', so its "
                "logDir cannot contain ','", "choose a directory without ','", key=False)
    every = runs(spec)
    _check_run_names(name, every, out)
    if each_run and not out.problems:
        for run in every:
            _run_problems(checked, name, run, out)


def _check_names(spec: dict[str, Any], used: list[tuple[PointerParts, str]],
                 out: Collector) -> None:
    """Placeholders and parameters match: each placeholder names a parameter or a run field
    the spec can fill, each parameter is used somewhere (whatever its values)."""
    params = lookup(spec, "sweep", "parameters")
    params = list(params) if isinstance(params, dict) else []
    has_logs = isinstance(lookup(spec, "tensorboard", "logDir"), str)
    names = {n for _, n in used}
    meant = set()  # the unused parameters a misspelt placeholder names: one problem, the typo
    for parts, used_name in used:
        if used_name == RUN_LOG_DIR and not has_logs:
            out.add(parts, f"placeholder (({RUN_LOG_DIR})) but the spec has no "
                    "tensorboard.logDir to put the run's directory under",
                    "set spec.tensorboard.logDir", key=False)
        elif used_name not in params and used_name not in BUILTINS:
            guess = closest(used_name, [p for p in params if p not in names])
            known = ", ".join(f"(({p}))" for p in [*params, *BUILTINS])
            out.add(parts, f"placeholder (({used_name})) names no parameter of the sweep",
                    f"did you mean (({guess}))?" if guess else f"known: {known}", key=False)
            meant.add(guess)
    for param in params:
        if param not in names and param not in meant:
            out.add(("spec", "sweep", "parameters", param),
                    f"parameter {param} is used nowhere: its runs would differ only in name",
                    f"write (({param})) in args or an env value, or remove the parameter")


def _check_run_names(name: str, every: list[Run], out: Collector) -> None:
    """Every run's TFJob name fits, the longest suffix included."""
    longest = max((naming.job_name(name, r.suffix) for r in every), key=len)
    if naming.is_experiment_name(name) and len(longest) > naming.MAX_NAME_LENGTH:
        left = naming.MAX_NAME_LENGTH - len(name) - 1
        out.add(("metadata", "name"),
                f'the longest run\'s TFJob name "{longest}" is {len(longest)} characters, '
                f"{len(longest) - naming.MAX_NAME_LENGTH} more than {naming.MAX_NAME_LENGTH} "
                f"(its pods are <job>-evaluator-0, at most {naming.MAX_LABEL})",
                f"the name leaves {max(left, 0)} characters for a run suffix; shorten "
                "metadata.name or the values", key=False)


def _run_problems(checked: Checked, name: str, run: Run, out: Collector) -> None:
    """One run's substituted fields, judged by the schema's rules: a value must not make a
    field invalid, nor add a line (the run's values are one-line names in TensorBoard)."""
    spec = checked.data["spec"]
    job = naming.job_name(name, run.suffix)
    substituted = run_spec(spec, name, run)
    before = dict(placeholder_fields(spec))
    after = dict(placeholder_fields(substituted))
    changed = {pointer_text(p): p for p in before if before[p] != after[p]}
    said = f"run {job} ({run.label()}): after substitution"
    for parts in changed.values():
        if _one_line().match(before[parts]) and not _one_line().match(after[parts]):
            out.add(parts, f"{said} the field holds a line break or control character",
                    "sweep values are single-line text", key=False)
    data = {**checked.data, "spec": substituted}
    for problem in schema_problems(checked.locator.document, data):
        if problem.pointer in changed:
            out.problems.append(replace(problem, message=f"{said} {problem.message}"))
