"""The values file a spec makes, measured before render writes it.

A sweep's values hold one entry per run, with the run's args and env values put in
(`run_values`, which render/values.py lays under `runs`), so a grid of long args can make a
file larger than any file tfgen reads (repo/files.py's MAX_BYTES); the gate would then refuse
the generated file, at no line of the spec. The entries are built here, so that the validate
stage measures them as the writer (repo/yamlwrite.py) writes them, in UTF-8 bytes, one run at a
time, stopping as soon as the file is over the limit: a hostile grid costs no more than a file
at the limit, and a run whose put-in text alone would pass the limit is not even built. The
rest of the file holds the spec's fields once; it is measured as the spec written by the same
writer (the values name the same fields, a few keys more or fewer: hence "about").
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ...problems import Problem
from ...repo import naming
from ...repo.files import MAX_BYTES
from ...repo.yamlwrite import dump_yaml
from ..experiment import sweep
from ..experiment.checked import Checked, Collector

# A spec whose JSON is smaller than this share of the limit cannot make a values file over it
# (block YAML adds at most a few bytes of indentation per value, and escapes at most triple a
# character): most specs are not written out at all.
_SMALL_SHARE = 8
_RUNS_KEY = "runs"


def env_var(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One spec env entry -> a Kubernetes EnvVar (`value` or `valueFrom.<kind>KeyRef`)."""
    out: dict[str, Any] = {"name": entry["name"]}
    if "value" in entry:
        out["value"] = str(entry["value"])
        return out
    for ref in ("secretKeyRef", "configMapKeyRef"):
        if ref in entry:
            source = entry[ref]
            selector: dict[str, Any] = {"name": source["name"], "key": source["key"]}
            if "optional" in source:
                selector["optional"] = bool(source["optional"])
            out["valueFrom"] = {ref: selector}
            return out
    # The schema requires exactly one source; an entry without any is an empty value, which
    # is what Kubernetes does with a bare `name` too.
    out["value"] = ""
    return out


def env_list(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Spec env list -> Kubernetes EnvVar list, order kept (later entries may use earlier ones)."""
    return [env_var(entry) for entry in entries]


def run_values(spec: dict[str, Any], name: str, logs: str, run: sweep.Run) -> dict[str, Any]:
    """One run of a sweep as the chart ranges over it: every placeholder replaced here, so Helm
    only ever sees literal text. `logs` is the TensorBoard log directory the values give."""
    own = sweep.run_spec(spec, name, run)
    return {
        "name": naming.job_name(name, run.suffix),
        "suffix": run.suffix,
        "logDir": sweep.run_log_dir(logs, run),
        "args": list(own["args"]),
        "env": env_list(own["env"]),
        # only the roles with args or env of their own; the others take the run's
        "roles": {
            role: {"args": list(own["roles"][role].get("args", [])),
                   "env": env_list(own["roles"][role]["env"])}
            for role in naming.ROLES
            if own["roles"].get(role, {}).get("args") or own["roles"].get(role, {}).get("env")
        },
    }


def _bytes(text: str) -> int:
    # A lone surrogate (a YAML escape can make one) counts as what UTF-8 would take for it;
    # the writer escapes it, and the entry's own measure says so.
    return len(text.encode("utf-8", "surrogatepass"))


def tensorboard_log_dir(tensorboard: Mapping[str, Any], mount_path: str) -> str:
    """The log directory the values give TensorBoard, under which each run has its own. A
    disabled TensorBoard may have no logDir; the chart still wants an absolute path, so it gets
    the conventional one (unused while disabled) rather than an invalid ""."""
    return tensorboard.get("logDir") or f"{mount_path.rstrip('/')}/logs"


class _PutIn:
    """The bytes a run's put-in text takes at least (each field's text with the run's values
    in place of its placeholders), worked out without putting them in: a field of many
    placeholders and long values must not be built to be found too large."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.fixed = 0
        self.uses: Counter[tuple[str, int]] = Counter()  # (name, bytes as written) -> uses
        for _, text in sweep.placeholder_fields(spec):
            found = list(sweep.PLACEHOLDER.finditer(text))
            self.fixed += _bytes(text) - sum(_bytes(m.group(0)) for m in found)
            self.uses.update((m.group(1), _bytes(m.group(0))) for m in found)

    def of(self, values: dict[str, str]) -> int:
        return self.fixed + sum(
            uses * (_bytes(values[name]) if name in values else written)
            for (name, written), uses in self.uses.items())


def _run_sizes(spec: dict[str, Any], name: str, room: int) -> list[int]:
    """The bytes each run's entry takes, in run order, until they fill more than `room`."""
    logs = tensorboard_log_dir(spec["tensorboard"], spec["storage"]["mountPath"])
    put_in = _PutIn(spec)
    sizes: list[int] = []
    for run in sweep.runs(spec):
        least = put_in.of(sweep.bindings(spec, name, run))
        if sum(sizes) + least > room:
            sizes.append(least)
            break
        entry = dump_yaml({_RUNS_KEY: [run_values(spec, name, logs, run)]})
        sizes.append(_bytes(entry) - len(f"{_RUNS_KEY}:\n"))
        if sum(sizes) > room:
            break
    return sizes


def _about(size: float) -> str:
    # Three figures: an estimate, said as one; a hostile sweep's may be thousands of MB.
    scale, unit = next((s, u) for s, u in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"))
                       if size >= s or u == "MB")
    return f"about {size / scale:.3g} {unit}"


def _limit() -> str:
    return f"the limit of one file is {MAX_BYTES // 2**20} MiB ({MAX_BYTES:,} bytes)"


def size_problems(checked: Checked, max_runs: int) -> list[Problem]:
    """A spec whose values file would be over the one-file limit, refused at `spec.sweep`
    (at `spec` without a sweep). Asked of a spec the schema accepts, whose sweep makes at most
    `max_runs` runs (tfgen.yaml's sweep.maxRuns: a larger one is refused, never expanded)."""
    data, spec = checked.data, checked.data["spec"]
    swept = sweep.has_sweep(spec)
    if swept and sweep.run_count(spec) > max_runs:
        return []
    rest = {**data, "spec": {k: v for k, v in spec.items() if k != "sweep"}}
    if not swept:
        return _unswept_size_problems(checked, rest)
    return _swept_size_problems(checked, rest)


def _unswept_size_problems(checked: Checked, rest: dict[str, Any]) -> list[Problem]:
    """A spec without a sweep: its values file holds the spec's fields once (`rest`)."""
    if len(json.dumps(rest, ensure_ascii=False, default=str)) * _SMALL_SHARE < MAX_BYTES:
        return []
    fixed = _bytes(dump_yaml(rest))
    out = Collector(checked.locator)
    if fixed > MAX_BYTES:
        out.add(("spec",), f"this experiment makes a values file of {_about(fixed)}; "
                f"{_limit()}", "shorten its longest fields: args, env values, annotations")
    return out.problems


def _swept_size_problems(checked: Checked, rest: dict[str, Any]) -> list[Problem]:
    """A sweep's values file: the spec's fields once (`rest`), then an entry per run, measured
    only until they are over the limit."""
    data, spec = checked.data, checked.data["spec"]
    fixed = _bytes(dump_yaml(rest))
    sizes = _run_sizes(spec, str(data["metadata"]["name"]), MAX_BYTES - fixed)
    if fixed + sum(sizes) <= MAX_BYTES:
        return []
    count, each = sweep.run_count(spec), sum(sizes) / len(sizes)
    fit = max(MAX_BYTES - fixed, 0) // each
    runs = f"sweep's {count:,} runs make" if count != 1 else "sweep's one run makes"
    out = Collector(checked.locator)
    out.add(("spec", "sweep"), f"the {runs} a values file of {_about(fixed + each * count)}; "
            f"{_limit()}",
            f"at most {fit:,.0f} runs of this size fit: fewer values, or split the sweep into "
            "several experiments" if fit else
            "not even one run of this size fits: shorten the args and env values the sweep "
            "puts its values in")
    return out.problems
