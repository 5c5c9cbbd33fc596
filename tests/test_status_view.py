"""`tfgen status`'s text, JSON and `--watch` lines from statuses built by hand: the shapes the
lab tests (tests/lab/test_read_side.py) read from the real controllers, here for every
column and edge without a cluster."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from tfgen.live.status import ExperimentStatus, RunStatus, age
from tfgen.live.views import as_json, change_lines, pods_words, summary, table

NOW = datetime(2026, 12, 6, 12, 0, 0, tzinfo=timezone.utc)
STARTED = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run(name: str, phase: str, **kwargs: object) -> RunStatus:
    return RunStatus(name, phase, started=STARTED, **kwargs)  # type: ignore[arg-type]


def _experiment(name: str, runs: list[RunStatus], cluster: str = "", sweep: bool = False,
                why: list[str] | None = None) -> ExperimentStatus:
    return ExperimentStatus(name, "default", cluster, "tfjob", "", "Synced", "Healthy", runs,
                            sweep, why or [])


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0s"), (59, "59s"), (60, "1m"), (3599, "59m"), (3600, "1h"), (86399, "23h"),
    (86400, "1d"), (-5, "0s")])
def test_age_is_the_largest_whole_unit(seconds: int, shown: str) -> None:
    then = (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert age(then, NOW) == shown
    assert age("", NOW) == "-"


def test_pods_are_said_in_the_roles_reading_order() -> None:
    run = _run("r", "running", pods={"ps": (2, 2), "worker": (1, 2), "chief": (1, 1)})
    assert pods_words(run) == "chief 1/1, worker 1/2, ps 2/2"
    assert pods_words(_run("r", "running")) == "-"


def test_the_table_puts_a_sweeps_runs_and_every_reason_under_their_line() -> None:
    statuses = [
        _experiment("mnist", [_run("mnist", "failed", pods={"worker": (0, 2)},
                                   why=["mnist-worker-0 exited with code 3"])],
                    why=["sync failed: boom"]),
        _experiment("sweep", [_run("sweep-a", "running", gpus=2, restarts=1),
                              _run("sweep-b", "queued", why=["Kueue: no quota"])],
                    sweep=True),
    ]
    assert table(statuses, NOW).splitlines() == [
        "EXPERIMENT  SYNC    HEALTH   PHASE                PODS        RESTARTS  GPUS  AGE",
        "mnist       Synced  Healthy  failed               worker 0/2  0         0     5m",
        "  - sync failed: boom",
        "  - mnist-worker-0 exited with code 3",
        "sweep       Synced  Healthy  1 running, 1 queued  -           1         2     5m",
        "  sweep-a                    running              -           1         2     5m",
        "  sweep-b                    queued               -           0         0     5m",
        "    - Kueue: no quota",
    ]


def test_the_cluster_column_only_where_clusters_are_named() -> None:
    named = table([_experiment("x", [_run("x", "running")], cluster="gpu-b")], NOW)
    assert named.splitlines()[0].split()[:3] == ["EXPERIMENT", "CLUSTER", "SYNC"]
    assert named.splitlines()[1].split()[:2] == ["x", "gpu-b"]
    plain = table([_experiment("x", [_run("x", "running")])], NOW)
    assert "CLUSTER" not in plain


def test_failing_is_counted_and_named() -> None:
    ok = _experiment("a", [_run("a", "succeeded")])
    bad = _experiment("b", [RunStatus("b", "failed", failing=True)])
    assert summary([ok, bad]) == "2 experiments: 1 failing (b)"
    assert summary([ok]) == "1 experiment, none failing"
    doc = json.loads(as_json([ok, bad], calls=13))
    assert doc["apiCalls"] == 13
    assert [e["failing"] for e in doc["experiments"]] == [False, True]
    one_line = as_json([ok, bad], calls=13, indent=None)  # what --watch prints per change
    assert "\n" not in one_line and json.loads(one_line) == doc


def test_watch_prints_a_line_only_for_what_changed() -> None:
    first = [_experiment("a", [_run("a", "running")]), _experiment("b", [_run("b", "queued")])]
    lines, seen = change_lines({}, first, NOW)
    assert lines == ["12:00:00 a Synced Healthy running - 0 0",
                     "12:00:00 b Synced Healthy queued - 0 0"]
    later = [_experiment("a", [_run("a", "running")]),
             _experiment("b", [_run("b", "running", why=["b-worker-0 cannot be scheduled"])])]
    lines, _ = change_lines(seen, later, NOW + timedelta(minutes=7))
    assert lines == ["12:07:00 b Synced Healthy running - 0 0; b-worker-0 cannot be scheduled"]
