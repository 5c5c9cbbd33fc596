"""Shared pytest configuration: the `--update-golden` flag and its `update_golden` fixture,
the project's helm for every test (many run in other folders), one CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import HOSTILE_RECORDS, hostile_summary

PROJECT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    # Tests build repositories in temporary folders; tfgen looks for the helm of the
    # repository it works on, so point it at the project's own (installed by `make setup`).
    for variable, major in (("TFGEN_HELM", 4), ("TFGEN_HELM3", 3)):
        local = PROJECT / ".tools" / "helm" / f"v{major}" / "helm"
        if local.exists():
            os.environ.setdefault(variable, str(local))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing against them",
    )


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run should rewrite golden files rather than compare with them."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def runner() -> CliRunner:
    """The one CLI runner of the suite; tests invoke with `catch_exceptions=False`, so a bug
    shows its traceback instead of an exit code."""
    return CliRunner()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    # The hostile corpus's figures (time and memory per case) are a report, not assertions.
    lines = hostile_summary(config.stash.get(HOSTILE_RECORDS, []))
    if lines:
        terminalreporter.section("hostile corpus")
        for line in lines:
            terminalreporter.write_line(line)
