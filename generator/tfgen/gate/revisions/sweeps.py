"""A merged sweep judged per parameter (`tfgen check --base`): the runs a change deletes.

Each run of a sweep is a job of its own, named by its values; Argo CD prunes the jobs that
leave Git. A value removed from a parameter deletes the live runs it made: that is how part
of a sweep is stopped (there is no other way short of retiring the whole experiment), and
their logs and checkpoints stay on the NAS, so it is allowed, and said as a warning naming the
runs that go. A value replaced by another deletes those runs and starts others in their
place, a change a started run cannot take: refused, once, at the parameter's line, pairing
each new run with the live run it replaces. Runs merely added (a new value, the old ones
kept) are new training beside the live runs, and not said at all.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from ...errors import InputError
from ...problems import ERROR, WARNING, Problem
from ...repo import naming
from ...validate.experiment import sweep
from ...validate.experiment.checked import lookup
from ...validate.yaml.loader import load_file


@dataclass
class SweepVerdict:
    """What a change does to a live sweep's runs: the problems, each at a parameter's line,
    and the new jobs accounted for (their `renamed` changes are not said again)."""

    problems: list[Problem] = field(default_factory=list)
    explained: set[str] = field(default_factory=set)


def sweep_verdict(old: Any, spec_path: str, name: str) -> SweepVerdict:
    """The runs of the live sweep `old` (the spec at the base) that the spec now at
    `spec_path` deletes, per parameter; nothing when either side has no sweep or does not
    read."""
    verdict = SweepVerdict()
    try:
        document = load_file(spec_path)
    except InputError:
        return verdict
    old_spec, new_spec = lookup(old, "spec"), lookup(document.data, "spec")
    if not (isinstance(old_spec, dict) and isinstance(new_spec, dict)
            and sweep.has_sweep(old_spec) and sweep.has_sweep(new_spec)):
        return verdict
    try:
        old_runs, new_runs = sweep.runs(old_spec), sweep.runs(new_spec)
    except (TypeError, ValueError, KeyError, AttributeError):
        return verdict  # a sweep too broken to expand: validate says why
    kept = {run.suffix for run in new_runs}
    deleted = [run for run in old_runs if run.suffix not in kept]
    born = {run.suffix for run in old_runs}
    added = [run for run in new_runs if run.suffix not in born]
    # every new run is accounted for here: one that replaces a live run is said with it, the
    # others are new training beside the live runs, for nothing to blame
    verdict.explained.update(naming.job_name(name, run.suffix) for run in added)
    for parameter, gone in _by_parameter(deleted, old_spec, new_spec).items():
        line, col = 0, 0
        with contextlib.suppress(InputError, KeyError):
            line, col = document.locate(("spec", "sweep", "parameters", parameter))
        problem = _said(parameter, gone, added, old_spec, new_spec, name)
        verdict.problems.append(Problem(
            spec_path, line, col, pointer=f"$.spec.sweep.parameters.{parameter}",
            message=problem[0], hint=problem[1], severity=problem[2]))
    return verdict


def _texts(spec: dict[str, Any], parameter: str) -> list[str]:
    values = lookup(spec, "sweep", "parameters", parameter)
    return [sweep.value_text(v) for v in values] if isinstance(values, list) else []


def _by_parameter(deleted: list[sweep.Run], old_spec: dict[str, Any],
                  new_spec: dict[str, Any]) -> dict[str, list[sweep.Run]]:
    """The deleted runs, each under the first parameter whose value it had is gone."""
    out: dict[str, list[sweep.Run]] = {}
    for run in deleted:
        for parameter, value in run.values:
            if sweep.value_text(value) not in _texts(new_spec, parameter):
                out.setdefault(parameter, []).append(run)
                break
    return out


def _said(parameter: str, gone: list[sweep.Run], added: list[sweep.Run],
          old_spec: dict[str, Any], new_spec: dict[str, Any], name: str
          ) -> tuple[str, str, str]:
    """(message, hint, severity) of the runs one parameter's change deletes."""
    old_texts, new_texts = _texts(old_spec, parameter), _texts(new_spec, parameter)
    removed = [v for v in old_texts if v not in new_texts]
    fresh = [v for v in new_texts if v not in old_texts]
    jobs = ", ".join(naming.job_name(name, run.suffix) for run in gone)
    if not fresh:
        return (f"{_values(removed)} removed: Argo CD deletes the live runs {jobs} (their "
                "training stops; their logs and checkpoints stay on the NAS)",
                "keep the value to keep those runs; removing it is how part of a sweep is "
                "stopped", WARNING)
    pairs = []
    for run in gone:
        value = dict((p, sweep.value_text(v)) for p, v in run.values)[parameter]
        index = removed.index(value) if value in removed else -1
        instead = fresh[index] if 0 <= index < len(fresh) else None
        twin = next((new for new in added if instead is not None and _twin(run, new, parameter,
                                                                           instead)), None)
        if twin is not None:
            pairs.append(f"{naming.job_name(name, run.suffix)} -> "
                         f"{naming.job_name(name, twin.suffix)}")
    replaced = (f"{_values(removed)} replaced by {_values(fresh)}" if len(removed) == len(fresh)
                else f"{_values(removed)} removed and {_values(fresh)} added")
    return (f"{replaced}: a started run cannot take it; Argo CD would delete the live runs "
            f"{jobs} and start others in their place"
            + (f" ({'; '.join(pairs)})" if pairs else ""),
            f"keep {_values(removed)} and list {_values(fresh)} beside it: new runs, the live "
            f"ones kept; or rerun the sweep under a new name (`tfgen rerun {name} --as NEW`) "
            "and change it there", ERROR)


def _twin(old: sweep.Run, new: sweep.Run, parameter: str, value: str) -> bool:
    """Whether `new` is `old` with `parameter` at `value` and every other value alike."""
    olds = {p: sweep.value_text(v) for p, v in old.values}
    news = {p: sweep.value_text(v) for p, v in new.values}
    return {**olds, parameter: value} == news


def _values(texts: list[str]) -> str:
    return ", ".join(texts)
