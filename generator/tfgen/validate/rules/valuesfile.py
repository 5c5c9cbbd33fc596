"""The values file a spec makes, measured before render writes it, to the byte.

A sweep's values hold one entry per run, with the run's args and env values put in, so a grid
of long args can make a file larger than any file tfgen reads (repo/files.py's MAX_BYTES); the
gate would then refuse the generated file, at no line of the spec. So the validate stage
measures the file render will write: its header, the values render builds for the spec in
this repository (`values.repo_values`, render's own call) written by the writer render uses
(repo/yamlwrite.py), in UTF-8 bytes. A sweep's runs are measured one at a time, stopping as
soon as the file is over the limit: a hostile grid costs no more than a file at the limit, and
a run whose put-in text alone would pass the limit is not even built. A file measured whole is
exact; one given up on is extrapolated from the runs measured (hence "about").
"""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from ...problems import Problem
from ...repo import layout
from ...repo.files import MAX_BYTES
from ...repo.keys import content_hash
from ...repo.yamlwrite import dump_yaml, header
from ..config.load import RepoConfig
from ..experiment import sweep
from ..experiment.checked import Checked, Collector
from .values import RUNS_KEY, repo_values, run_values, tensorboard_log_dir


def _bytes(text: str) -> int:
    # A lone surrogate (a YAML escape can make one) counts as what UTF-8 would take for it;
    # the writer escapes it, and the entry's own measure says so.
    return len(text.encode("utf-8", "surrogatepass"))


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
        entry = dump_yaml({RUNS_KEY: [run_values(spec, name, logs, run)]})
        sizes.append(_bytes(entry) - len(f"{RUNS_KEY}:\n"))
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


class Measured(NamedTuple):
    """What measuring a spec's values file gives: its problems, and the content hash of the
    file render will write when it was measured whole (a spec without a sweep), so that a
    later stage can compare the committed file with it without writing the file again."""

    problems: list[Problem]
    digest: str | None = None


def measure(checked: Checked, config: RepoConfig) -> Measured:
    """The values file `checked` makes (`Measured`): over the one-file limit, it is refused at
    `spec.sweep` (at `spec` without a sweep). Asked of a spec the schema accepts, whose sweep
    makes at most tfgen.yaml's sweep.maxRuns runs (a larger one is refused, never expanded)."""
    data, spec = checked.data, checked.data["spec"]
    swept = sweep.has_sweep(spec)
    if swept and sweep.run_count(spec) > config.max_runs:
        return Measured([])
    source = layout.relative(config.root, checked.source)
    out = Collector(checked.locator)
    if not swept:  # the whole file, as render writes it
        content = (header((source,)) + dump_yaml(repo_values(data, config))).encode(
            "utf-8", "surrogatepass")
        if len(content) > MAX_BYTES:
            out.add(("spec",), f"this experiment makes a values file of {len(content):,} "
                    f"bytes; {_limit()}", "shorten its longest fields: args, env values, "
                    "annotations")
        return Measured(out.problems, content_hash(content))
    fixed = (_bytes(header((source,)))
             + _bytes(dump_yaml(repo_values(data, config, runs=False))))
    fixed += len(f"{RUNS_KEY}:\n")  # the runs' key, then each run's entry
    sizes = _run_sizes(spec, str(data["metadata"]["name"]), MAX_BYTES - fixed)
    if fixed + sum(sizes) <= MAX_BYTES:
        return Measured([])
    count, each = sweep.run_count(spec), sum(sizes) / len(sizes)
    fit = max(MAX_BYTES - fixed, 0) // each
    runs = f"sweep's {count:,} runs make" if count != 1 else "sweep's one run makes"
    size = (f"{fixed + sum(sizes):,} bytes" if len(sizes) == count
            else _about(fixed + each * count))
    out.add(("spec", "sweep"), f"the {runs} a values file of {size}; {_limit()}",
            f"at most {fit:,.0f} runs of this size fit: fewer values, or split the sweep into "
            "several experiments" if fit else
            "not even one run of this size fits: shorten the args and env values the sweep "
            "puts its values in")
    return Measured(out.problems)
