"""Data-driven spec cases: every file under fixtures/specs/valid must validate, every file under
fixtures/specs/invalid must fail with the message its `# expect:` header names (and, with
`# expect-line: N`, on that line; `# expect-not:` text must not appear). Adding a case is
adding a file."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import assert_expected_problems, case_headers
from tfgen.validate.config.load import load_config
from tfgen.validate.experiments import validate_paths

REPO = Path(__file__).resolve().parents[1]
CASES = Path(__file__).parent / "fixtures" / "specs"
VALID = sorted((CASES / "valid").glob("*.yaml"))
INVALID = sorted((CASES / "invalid").glob("*.yaml"))


@pytest.fixture(scope="module")
def config():
    return load_config([REPO])


def _headers(path: Path) -> dict[str, list[str]]:
    return case_headers(path, ("expect", "expect-line", "expect-not"))


def test_there_are_enough_cases():
    assert len(INVALID) >= 30
    assert VALID


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_case(path: Path, config) -> None:
    result = validate_paths([path], config)
    assert [p.text() for p in result.problems] == []
    assert [e.name for e in result.experiments] == [path.stem]


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_case(path: Path, config) -> None:
    headers = _headers(path)
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} must start with '# expect: <message>'"
    result = validate_paths([path], config)
    assert result.experiments == []
    texts = assert_expected_problems(result.problems, headers)
    for unwanted in headers.get("expect-not", []):
        assert not [t for t in texts if unwanted in t], "\n".join(texts)
    for problem in result.problems:
        assert problem.path.endswith(path.name) or problem.path.endswith("tfgen.yaml")
        assert problem.line >= 1, problem.text()
