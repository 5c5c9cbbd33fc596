"""The hostile corpus: every case in tests/hostile/<class>/<case>.yaml run through the real CLI,
by the harness in hostile_corpus.py (the case format is in tests/hostile/README.md); the
figures (per class, slowest case, peak memory) are printed at the end of the session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_corpus import (
    CASE_FILES,
    CORPUS,
    MEMORY_LIMIT,
    Records,
    argo_problems,
    case_id,
    load_case,
    run_tfgen,
    set_path,
)


def test_corpus_is_well_formed() -> None:
    assert len(CASE_FILES) > 0, "tests/hostile/ holds no case"
    errors = []
    for path in CASE_FILES:
        if len(path.relative_to(CORPUS).parts) != 2:
            errors.append(f"{case_id(path)}: a case lives in tests/hostile/<class>/<case>.yaml")
        try:
            load_case(path)
        except ValueError as exc:
            errors.append(str(exc))
    assert not errors, "\n".join(errors)


def _paths() -> Iterator[Any]:
    for path in CASE_FILES:
        yield pytest.param(path, id=case_id(path))


@pytest.mark.go  # every check runs kubeconform beside the builtin validator
@pytest.mark.parametrize("case_file", list(_paths()))
def test_case(case_file: Path, corpus: Records) -> None:
    outcome = corpus.outcomes[case_file]
    if isinstance(outcome, ValueError):
        pytest.fail(str(outcome), pytrace=False)
    if outcome.problems:
        pytest.fail(
            f"{case_id(case_file)} ({outcome.about}):\n  " + "\n  ".join(outcome.problems)
            + f"\n--- stdout ---\n{outcome.stdout[-3000:]}"
            + f"\n--- stderr ---\n{outcome.stderr[-3000:]}",
            pytrace=False,
        )


def test_set_path() -> None:
    data: dict[str, Any] = {"a": {"b": [1, 2]}, "x": 1}
    set_path(data, "a.b.1", 5)
    set_path(data, "a.b.2", 6)
    set_path(data, r"a.c\.d.e", "v")
    set_path(data, "x", None)
    assert data == {"a": {"b": [1, 5, 6], "c.d": {"e": "v"}}}
    set_path(data, "a.b.0", None)
    assert data["a"]["b"] == [5, 6]


def _under_memory_limit(code: str) -> subprocess.CompletedProcess[str]:
    """Python `code` run in a child under the harness's memory bound."""
    limit = (f"import resource\n"
             f"resource.setrlimit(resource.RLIMIT_DATA, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n")
    return subprocess.run([sys.executable, "-c", limit + code], capture_output=True, text=True,
                          timeout=60, check=False)


def test_memory_limit_lets_helm_run(tmp_path: Path) -> None:
    """The bound is not so tight that the real helm fails under it."""
    outcome = run_tfgen(["--version"], tmp_path, dict(os.environ), None, tmp_path)
    assert outcome.code == 0 and "tfgen" in outcome.stdout
    helm = os.environ.get("TFGEN_HELM") or shutil.which("helm")
    assert helm, "no helm to try"
    result = _under_memory_limit(
        f"import subprocess, sys\nsys.exit(subprocess.run([{helm!r}, 'version']).returncode)")
    assert result.returncode == 0, result.stderr
    assert "Version" in result.stdout


def test_memory_limit_stops_runaway_allocation(tmp_path: Path) -> None:
    """The bound holds: a child asking for twice the limit gets MemoryError."""
    result = _under_memory_limit(f"bytearray({2 * MEMORY_LIMIT})")
    assert result.returncode != 0 and "MemoryError" in result.stderr


def test_argo_problems_accepts_only_old_or_clean_content() -> None:
    before = {".": ("dir", None), "a.yaml": ("file", b"old"), "gone.yaml": ("file", b"x")}
    reference = {".": ("dir", None), "a.yaml": ("file", b"new")}
    assert argo_problems(before, dict(before), reference) == []
    assert argo_problems(before, reference, reference) == []  # written and pruned as render does
    half = {**before, "a.yaml": ("file", b"ne")}
    assert argo_problems(before, half, reference) == [
        "argo/a.yaml is a file that is neither its old content nor a clean render's"]
    link = {**before, "b": ("link", "/etc")}
    assert argo_problems(before, link, reference) == [
        "argo/b is a link that is neither its old content nor a clean render's"]


def test_malformed_cases_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "hostile" / "demo"
    folder.mkdir(parents=True)
    bad = folder / "typo.yaml"
    bad.write_text("about: x\nrun: [validate]\nexit: 0\nexpect: [ok]\nexpcet: [typo]\n"
                   "files: [not, a, mapping]\nsymlinks: {../out: /etc}\n")
    with pytest.raises(ValueError) as info:
        load_case(bad, corpus=tmp_path / "hostile")
    message = str(info.value)
    assert "unknown key `expcet`" in message
    assert "`files` must be a dict" in message
    assert "'../out' is not a relative path inside the copy" in message
