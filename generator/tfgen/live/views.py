"""`tfgen status` shown: an aligned table (a sweep's runs under their experiment, the reasons
on indented lines), JSON for tools, and the one line per change `--watch` prints when piped."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from ..repo import naming
from ..words import counted
from .status import ExperimentStatus, RunStatus, age

STATUS_FORMATS = ("text", "json")
HEADER = ("EXPERIMENT", "SYNC", "HEALTH", "PHASE", "PODS", "RESTARTS", "GPUS", "AGE")


def pods_words(run: RunStatus) -> str:
    """`worker 2/2, ps 1/1, chief 1/1`, roles in their reading order; "-" for none."""
    order = {role: i for i, role in enumerate(naming.ROLES)}
    return ", ".join(f"{role} {ready}/{wanted}" for role, (ready, wanted)
                     in sorted(run.pods.items(), key=lambda p: order.get(p[0], 99))) or "-"


def _run_cells(run: RunStatus, now: datetime | None) -> list[str]:
    return [run.phase, pods_words(run) if run.started else "-", str(run.restarts),
            str(run.gpus), age(run.started, now)]


def _summary(runs: list[RunStatus]) -> str:
    """A sweep's runs counted by phase: `2 running, 1 queued`."""
    counts = Counter(run.phase for run in runs)
    return ", ".join(f"{n} {phase}" for phase, n in counts.items())


def _with_clusters(statuses: list[ExperimentStatus]) -> bool:
    """Whether the CLUSTER column is shown: only where tfgen.yaml names clusters."""
    return any(s.cluster for s in statuses)


def rows(statuses: list[ExperimentStatus], now: datetime | None = None
         ) -> list[tuple[list[str], list[str]]]:
    """(cells, reasons) per line: an experiment, then a sweep's runs indented."""
    out = []
    clusters = _with_clusters(statuses)
    for exp in statuses:
        app = [*([exp.cluster] if clusters else []), exp.sync or "-", exp.health or "-"]
        if not exp.sweep and exp.runs:
            run = exp.runs[0]
            out.append(([exp.name, *app, *_run_cells(run, now)], exp.why + run.why))
            continue
        runs = exp.runs
        out.append(([exp.name, *app, _summary(runs), "-",
                     str(sum(r.restarts for r in runs)), str(sum(r.gpus for r in runs)),
                     age(min((r.started for r in runs if r.started), default=""), now)],
                    exp.why))
        blank = [""] * len(app)
        out += [([f"  {run.name}", *blank, *_run_cells(run, now)], run.why) for run in runs]
    return out


def table(statuses: list[ExperimentStatus], now: datetime | None = None) -> str:
    lines = rows(statuses, now)
    header = [HEADER[0], *(["CLUSTER"] if _with_clusters(statuses) else []), *HEADER[1:]]
    cells = [header] + [c for c, _ in lines]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    out = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)).rstrip()]
    for row, reasons in lines:
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        indent = "    " if row[0].startswith("  ") else "  "
        out += [f"{indent}- {reason}" for reason in reasons]
    return "\n".join(out)


def summary(statuses: list[ExperimentStatus]) -> str:
    failing = [s.name for s in statuses if s.failing]
    head = counted(len(statuses), "experiment")
    return f"{head}: {len(failing)} failing ({', '.join(failing)})" if failing else \
        f"{head}, none failing"


def as_json(statuses: list[ExperimentStatus], calls: int, indent: int | None = 2) -> str:
    """The statuses and the API calls made; `indent=None`: on one line (`--watch`)."""
    doc: dict[str, Any] = {"experiments": [s.as_dict() for s in statuses], "apiCalls": calls}
    return json.dumps(doc, indent=indent)


def change_lines(before: dict[str, str], statuses: list[ExperimentStatus],
                 now: datetime) -> tuple[list[str], dict[str, str]]:
    """For `--watch` into a pipe: a time-stamped line for each experiment or run whose line
    changed since `before` (line key -> text), and the new texts."""
    texts = {}
    for cells, reasons in rows(statuses, now=None):
        key = cells[0].strip()
        shown = [c for c in cells[1:] if c]
        texts[key] = " ".join([key, *shown[:-1]]) + "".join(f"; {r}" for r in reasons)
    stamp = now.strftime("%H:%M:%S")
    changed = [f"{stamp} {text}" for key, text in texts.items() if before.get(key) != text]
    return changed, texts
