"""Every problem a sweep can have: its parameters and how they combine, the run count against
tfgen.yaml's `sweep.maxRuns`, placeholders that name no parameter or sit in a field that takes
none, the longest run's TFJob name, and each run's fields once its values are filled in (the
expansion itself: `experiment/sweep`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from ...problems import Problem
from ...repo import naming
from ..experiment.checked import Checked, Collector, lookup
from ..experiment.sweep import (
    BUILTINS,
    PLACEHOLDER,
    RUN_LOG_DIR,
    Run,
    has_sweep,
    one_line,
    parameters,
    placeholder_fields,
    run_count,
    run_spec,
    runs,
    string_fields,
    value_text,
)
from ..schema.messages import closest
from ..schema.validator import schema_problems
from ..yaml.document import PointerParts, pointer_text

_WHERE = "placeholders are replaced only in args and env values, at spec level or per role"


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
    for parts, text in string_fields(data):
        if parts in fields:
            continue
        if parts[:2] != ("spec", "sweep") and (found := PLACEHOLDER.search(text)):
            out.add(parts, f"placeholder {found.group(0)} in a field that takes none", _WHERE,
                    key=False)


def _sweep_shape(spec: dict[str, Any], max_runs: int, out: Collector) -> bool:
    """The parameters, their combination and the run count; False when runs cannot be made."""
    params = parameters(spec)
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
        if one_line().match(before[parts]) and not one_line().match(after[parts]):
            out.add(parts, f"{said} the field holds a line break or control character",
                    "sweep values are single-line text", key=False)
    data = {**checked.data, "spec": substituted}
    for problem in schema_problems(checked.locator.document, data):
        if problem.pointer in changed:
            out.problems.append(replace(problem, message=f"{said} {problem.message}"))
