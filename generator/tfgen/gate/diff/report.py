"""How `tfgen diff` shows what a change does: a summary table first, every object in full only
on request.

The table has one row per experiment whose objects differ (or that goes to another cluster):
added, removed or changed, the cluster it goes to (where the repository names clusters), its
objects by kind, and the GPUs it requests before and after. `--full` adds each object's unified
diff. Text is for terminals; Markdown is one pull-request comment, opening with a marker line
(so a workflow finds and updates the comment it posted before) and the GPUs each namespace
requests against its quota, with the full diffs in one collapsed `<details>` block, cut to fit
GitHub's comment size limit with a note saying what was left out. `summary` is the closing
sentence, in plain words, for stderr.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import InputError
from ...validate.config.clusters import IMPLICIT
from ...words import counted
from . import DIFF_FORMATS
from .changes import CopyDiff, DiffResult, ExperimentChange, ObjectDiff
from .gpus import NamespaceGpus

COMMENT_MARKER = "<!-- tfgen-diff -->"
# GitHub refuses comments over 65,536 characters; leave room for the header and notes.
MAX_MARKDOWN_CHARS = 60_000
MAX_OBJECT_LINES = 300
NOTE_ROOM = 300  # kept free for the note that says what was cut
STATUSES = ("added", "changed", "removed")  # the order rows and counts are given in
# A change that a started run cannot take: `tfgen check --base` refuses it.
REFUSED = "refused"
REFUSED_HEAD = ("Refused by `tfgen check --base` (a started run cannot take these; it merges "
                "as a new run):")
# How objects fare, in that order: `kept` leaves Git but stays in the cluster (the PV and PVC,
# Prune=false and Delete=false), as `tfgen retire --delete` says.
OBJECT_STATUSES = ("added", "changed", "removed", "kept")


def _clip(text: str, max_lines: int) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) <= max_lines:
        return text
    return "".join(lines[:max_lines]) + f"... {counted(len(lines) - max_lines, 'more line')}\n"


def _by_kind(diffs: Sequence[ObjectDiff]) -> str:
    """`Deployment, 2 NetworkPolicy, TFJob`: the kinds, a count where there are several."""
    kinds: dict[str, int] = {}
    for d in diffs:
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    return ", ".join(kind if n == 1 else f"{n} {kind}" for kind, n in kinds.items())


def objects_cell(diffs: Sequence[ObjectDiff]) -> str:
    """`7 added: Deployment, 2 NetworkPolicy, ...; 1 changed: TFJob; 2 kept: ...`."""
    parts = []
    for status in OBJECT_STATUSES:
        of = [d for d in diffs if d.status == status]
        if of:
            parts.append(f"{len(of)} {status}: {_by_kind(of)}")
    return "; ".join(parts)


def _gpus_side(gpus: int | None, *, exists: bool) -> str:
    """One side of the GPUs cell: `none` where the experiment is not, `?` where its spec could
    not be read."""
    if not exists:
        return "none"
    return "?" if gpus is None else str(gpus)


def gpus_cell(change: ExperimentChange, arrow: str = "->") -> str:
    """`none -> 3`, `3 -> 4 (+1)`, `3` when unchanged, `?` for a side that could not be read;
    ` queued` after it when a Kueue queue admits the run (its GPUs are requested all the
    same)."""
    queued = " queued" if change.queued else ""
    before, after = change.gpus_before, change.gpus_after
    if change.status == "changed" and before == after:
        return _gpus_side(after, exists=True) + queued
    old = _gpus_side(before, exists=change.status != "added")
    new = _gpus_side(after, exists=change.status != "removed")
    return f"{old} {arrow} {new}{_delta(before, after)}{queued}"


def _delta(before: int | None, after: int | None) -> str:
    """` (+1)` between two known, different counts."""
    if before is None or after is None or before == after:
        return ""
    return f" ({after - before:+d})"


def cluster_cell(change: ExperimentChange, arrow: str = "->") -> str:
    """`gpu-a`, or `gpu-a -> gpu-b` for a run sent to another cluster."""
    before, after = change.cluster_before, change.cluster_after
    if before is None or after is None or before == after:
        return after or before or ""
    return f"{before} {arrow} {after}"


def _clustered(result: DiffResult) -> bool:
    """Whether the table shows the cluster: some row goes elsewhere than the one implicit
    cluster of a repository without clusters."""
    return any(name not in (None, IMPLICIT) for c in result.changes
               for name in (c.cluster_before, c.cluster_after))


def change_cell(change: ExperimentChange) -> str:
    """`changed`, or `changed, refused` when `tfgen check --base` refuses the change."""
    return f"{change.status}, {REFUSED}" if change.refused else change.status


def _refusals(result: DiffResult) -> list[str]:
    """Each refused change, as `tfgen check --base` says it."""
    return [p.text() for c in result.changes for p in c.refused]


def _status_words(diff: ObjectDiff) -> str:
    if diff.status == "kept":
        return ("kept (leaves Git, stays in the cluster with its data: Prune=false, "
                "Delete=false)")
    return diff.status


def _rows(result: DiffResult) -> list[tuple[ExperimentChange, list[ObjectDiff]]]:
    order = {status: i for i, status in enumerate(STATUSES)}
    changes = sorted(result.changes, key=lambda c: (order[c.status], c.name))
    return [(c, [d for d in result.diffs if d.experiment == c.name]) for c in changes]


def _what_changed(result: DiffResult) -> str:
    """`1 experiment added, 1 changed`."""
    parts: list[str] = []
    for status in STATUSES:
        n = sum(1 for c in result.changes if c.status == status)
        if n:
            parts.append(f"{n} {status}" if parts else f"{counted(n, 'experiment')} {status}")
    return ", ".join(parts)


def summary(result: DiffResult, *, full: bool) -> str:
    """The closing sentence: what the change does in the cluster, and what to do next."""
    if not result.changes:
        return (f"Nothing changes in the cluster against {result.base}. Next: open the pull "
                "request")
    objects = {s: sum(1 for d in result.diffs if d.status == s) for s in OBJECT_STATUSES}
    # "removed" is what Argo CD deletes; "kept" what leaves Git but stays in the cluster (the
    # volume and claim: Prune=false, Delete=false).
    present = [s for s in OBJECT_STATUSES if objects[s]]
    what = counted(len(result.diffs), "object") + (
        f" {present[0]}" if len(present) == 1
        else ": " + ", ".join(f"{objects[s]} {s}" for s in present))
    next_step = ("review the objects above, then open the pull request" if full else
                 f"`tfgen diff --base {result.base} --full` shows every object")
    if any(c.refused for c in result.changes):
        next_step = "make the refused changes a new run (`tfgen rerun NAME --as NEW`)"
    return f"Against {result.base}: {_what_changed(result)} ({what}). Next: {next_step}"


def _copy_words(copy: CopyDiff) -> str:
    return (f"{copy.name} is a copy of {copy.source}; what it changes in the spec"
            + ("" if copy.diff else ": nothing"))


def _text_table(result: DiffResult) -> list[str]:
    """The summary table for a terminal, each column as wide as its widest cell (but the last,
    which nothing follows)."""
    clustered = _clustered(result)
    rows = [("EXPERIMENT", *(("CLUSTER",) if clustered else ()), "CHANGE", "OBJECTS", "GPUS")]
    rows += [(c.name, *((cluster_cell(c),) if clustered else ()), change_cell(c),
              objects_cell(diffs), gpus_cell(c)) for c, diffs in _rows(result)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  " + row[-1] for row in rows]


def _text(result: DiffResult, full: bool, max_object_lines: int) -> str:
    if not result.changes:
        return ""
    lines = _text_table(result)
    if refusals := _refusals(result):
        lines += ["", REFUSED_HEAD, *refusals]
    for copy in result.copies:  # a copy is read against its source, before its objects
        lines += ["", f"=== {_copy_words(copy)}", _clip(copy.diff, max_object_lines).rstrip("\n")]
    if full:
        for c, diffs in _rows(result):
            for d in diffs:
                lines += ["", f"=== {c.name}: {d.ref} {_status_words(d)}",
                          _clip(d.diff, max_object_lines).rstrip("\n")]
    return "\n".join(lines)


def _gpu_rows(rows: Sequence[NamespaceGpus]) -> list[str]:
    """The Markdown GPU table, first thing a reviewer sees: who asks for how many GPUs, those
    the namespace's quota holds apart from those Kueue queues admit."""
    if not rows:
        return []
    out = ["| Namespace | GPUs before | GPUs after | Quota | Queued GPUs (Kueue) |",
           "| --- | ---: | ---: | ---: | ---: |"]
    for row in rows:
        before = "?" if row.before is None else str(row.before)
        quota = "none" if row.quota is None else str(row.quota)
        over = " **over quota**" if row.quota is not None and row.after > row.quota else ""
        queued = f"{row.queued_after}{_delta(row.queued_before, row.queued_after)}"
        out.append(f"| `{row.namespace}` | {before} | {row.after}"
                   f"{_delta(row.before, row.after)}{over} | {quota} | {queued} |")
    return [*out, "", "_The quota holds the GPUs of runs no Kueue queue admits; a queued run "
            "waits for its ClusterQueue instead._", ""]


def _markdown(result: DiffResult, full: bool, max_chars: int, max_object_lines: int) -> str:
    head = [COMMENT_MARKER, f"### tfgen diff against `{result.base}`", ""]
    head += _gpu_rows(result.gpus)
    if not result.changes:
        head.append("No rendered object changes.")
        return "\n".join(head) + "\n"
    head += [f"{_what_changed(result)}.", ""]
    head += (["| Experiment | Cluster | Change | Objects | GPUs |",
              "| --- | --- | --- | --- | --- |"] if _clustered(result) else
             ["| Experiment | Change | Objects | GPUs |", "| --- | --- | --- | --- |"])
    rows, cut = _markdown_rows(result, sum(len(line) + 1 for line in head), max_chars)
    head += rows
    if cut:
        return "\n".join(head) + "\n"
    if refusals := _refusals(result):
        head += ["", REFUSED_HEAD, "", *(f"- {line}" for line in refusals)]
    out = "\n".join(head) + "\n"
    for copy in result.copies:
        block = (f"\n**{_copy_words(copy).replace(copy.name, f'`{copy.name}`', 1)}**\n\n"
                 f"````diff\n{_clip(copy.diff, max_object_lines).rstrip()}\n````\n")
        if len(out) + len(block) <= max_chars - NOTE_ROOM:
            out += block
    if not full:
        return out + f"\nEvery object in full: `tfgen diff --base {result.base} --full`.\n"
    return _with_details(out, result, max_chars, max_object_lines)


def _markdown_rows(result: DiffResult, used: int, max_chars: int) -> tuple[list[str], bool]:
    """The table's rows, one per experiment, while the comment (`used` characters so far)
    stays under `max_chars`; whether rows were cut (the last lines then a note saying so)."""
    rows = _rows(result)
    lines: list[str] = []
    for i, (c, diffs) in enumerate(rows):
        status = f"{c.status}, **{REFUSED}**" if c.refused else c.status
        cluster = f" {cluster_cell(c, '→')} |" if _clustered(result) else ""
        row = (f"| `{c.name}` |{cluster} {status} | {objects_cell(diffs)} | "
               f"{gpus_cell(c, '→')} |")
        if used + len(row) > max_chars - NOTE_ROOM:
            note = (f"_{counted(len(rows) - i, 'more experiment')} not shown (comment size "
                    f"limit); run `tfgen diff --base {result.base}` locally._")
            return [*lines, "", note], True
        lines.append(row)
        used += len(row) + 1
    return lines, False


def _with_details(out: str, result: DiffResult, max_chars: int, max_object_lines: int) -> str:
    """The comment `out` followed by every object's diff in one collapsed block, as many as
    fit under `max_chars`, and a note on those left out."""
    out += (f"\n<details><summary>Every object in full "
            f"({counted(len(result.diffs), 'object')})</summary>\n\n")
    closing = "</details>\n"
    shown = 0
    for d in (d for _, diffs in _rows(result) for d in diffs):
        block = (f"**`{d.experiment}`: {d.ref} {_status_words(d)}**\n\n````diff\n"
                 f"{_clip(d.diff, max_object_lines).rstrip()}\n````\n\n")
        if len(out) + len(block) + len(closing) > max_chars - NOTE_ROOM:
            break
        out += block
        shown += 1
    if shown < len(result.diffs):
        out += (f"_{counted(len(result.diffs) - shown, 'more object')} not shown (comment size "
                f"limit); run `tfgen diff --base {result.base} --full` locally._\n\n")
    return out + closing


def format_diff(result: DiffResult, fmt: str, *, full: bool = False,
                max_chars: int = MAX_MARKDOWN_CHARS,
                max_object_lines: int = MAX_OBJECT_LINES) -> str:
    """The diff for people (`text`; empty when nothing changes) or for a pull-request comment
    (`markdown`): the summary table, and every object's diff with `full`."""
    if fmt not in DIFF_FORMATS:
        raise InputError(f"--format {fmt}: one of {', '.join(DIFF_FORMATS)}")
    if fmt == "text":
        return _text(result, full, max_object_lines)
    return _markdown(result, full, max_chars, max_object_lines)
