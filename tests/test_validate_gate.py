"""validate is the gate for everything about one spec: every case of the hostile corpus is run
through `tfgen validate` and `tfgen check` (each as a subprocess, under the corpus's limits),
and every problem check finds in a spec file must be one validate finds too, at the same line
with the same text and severity (a warning is one for both). A check that refuses a spec
validate accepted, or names another line, fails here. Cases that change the chart or the helm
are the gate's alone (validate reads specs)."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_hostile import (  # noqa: F401
    CASE_FILES,
    Session,
    case_id,
    hostile_session,
    load_case,
    prepare,
    run_tfgen,
    tfgen_env,
)
from tfgen.repo import layout

Found = set[tuple[str, int, str, str]]

# What a case may change that is no part of a spec: the chart and the helm that renders it. A
# chart or a helm changed by hand is the gate's to judge (its backstop); validate reads specs.
NOT_SPECS = (f"{layout.CHART_PATH}/",)
TOOLS = ("TFGEN_HELM", "PATH")


def about_specs(case: dict[str, Any]) -> bool:
    """Whether the case changes only specs and repository settings (not the chart or helm)."""
    touched = [*(case.get("files") or {}), *(case.get("symlinks") or {}),
               *(case.get("then") or {}), *(case.get("fifos") or [])]
    return (not any(str(rel).startswith(NOT_SPECS) for rel in touched)
            and not any(name in TOOLS for name in case.get("env") or {}))


def spec_problems(output: str) -> Found:
    """(path, line, message, severity) of every problem in a spec file in `--format json`
    output: check must see validate's warnings as warnings, and its errors as errors."""
    try:
        items = json.loads(output or "[]")
    except json.JSONDecodeError:
        return set()  # no problem list (a refused tfgen.yaml): nothing about a spec
    return {(p["path"], p["line"], p["message"], p.get("severity", "error")) for p in items
            if isinstance(p, dict) and str(p.get("path", "")).startswith(
                f"{layout.EXPERIMENTS_DIR}/") and str(p["path"]).endswith(layout.SPEC_SUFFIX)}


def verdicts(path: Path, session: Session) -> tuple[Found, Found]:
    """(validate's, check's) spec problems in a fresh copy prepared as the case prepares it."""
    case = load_case(path)
    if not about_specs(case):
        return set(), set()
    where = session.scratch / ("gate--" + case_id(path).replace("/", "--"))
    where.mkdir(parents=True)
    root, outside = prepare(case, session.base, session.walkthrough, where)
    env = tfgen_env(case, root, outside)
    out = []
    for command in ("validate", "check"):
        logs = where / command
        logs.mkdir()
        outcome = run_tfgen([command, "--format", "json"], root, env, None, logs)
        out.append(spec_problems(outcome.stdout))
    return out[0], out[1]


@pytest.fixture(scope="session")
def gate_verdicts(request: pytest.FixtureRequest, hostile_session: Session  # noqa: F811
                  ) -> dict[Path, tuple[Found, Found]]:
    selected = [item.callspec.params["case_file"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_check_finds_nothing_validate_missed"]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(selected, pool.map(lambda p: verdicts(p, hostile_session), selected),
                        strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("case_file", [pytest.param(p, id=case_id(p)) for p in CASE_FILES])
def test_check_finds_nothing_validate_missed(case_file: Path, gate_verdicts: dict[Path, Any]
                                             ) -> None:
    validated, checked = gate_verdicts[case_file]
    missed = sorted(checked - validated)
    assert not missed, "check found in a spec what validate did not (path, line, message, " \
        "severity):\n" \
        + "\n".join(map(str, missed)) + "\nvalidate found:\n" + "\n".join(map(str, validated))


def test_cases_about_the_chart_or_helm_are_the_gates() -> None:
    assert about_specs({"spec": {"set": {"spec.image": "x"}}})
    assert not about_specs({"files": {f"{layout.CHART_PATH}/values.yaml": "x"}})
    assert not about_specs({"env": {"TFGEN_HELM": "/bin/true"}})
    assert sum(about_specs(load_case(p)) for p in CASE_FILES) > len(CASE_FILES) // 2


def test_spec_problems_reads_only_spec_files() -> None:
    output = json.dumps([
        {"path": "experiments/a.yaml", "line": 3, "message": "m"},
        {"path": "experiments/a.yaml", "line": 4, "message": "w", "severity": "warning"},
        {"path": "argo/experiments/a/values.yaml", "line": 0, "message": "drift"},
        {"path": "tfgen.yaml", "line": 2, "message": "c"}])
    assert spec_problems(output) == {("experiments/a.yaml", 3, "m", "error"),
                                     ("experiments/a.yaml", 4, "w", "warning")}
    assert spec_problems("error: not json") == set()
