"""validate is the gate for everything about one spec: every case of the hostile corpus is run
through `tfgen validate` and `tfgen check` (each as a subprocess, under the corpus's limits, in
the same run of the corpus as test_hostile.py's: its `corpus` fixture),
and every problem check finds in a spec file must be one validate finds too, at the same line
with the same text and severity (a warning is one for both). A check that refuses a spec
validate accepted, or names another line, fails here. Cases that change the chart or the helm
are the gate's alone (validate reads specs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile_corpus import CASE_FILES, Records, about_specs, case_id, load_case, spec_problems
from tfgen.repo import layout


@pytest.mark.go  # the hostile corpus's runs (kubeconform)
@pytest.mark.parametrize("case_file", [pytest.param(p, id=case_id(p)) for p in CASE_FILES])
def test_check_finds_nothing_validate_missed(case_file: Path, corpus: Records
                                             ) -> None:
    validated, checked = corpus.verdicts[case_file]
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
