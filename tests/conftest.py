"""Shared pytest configuration: the `--update-golden` flag and its `update_golden` fixture."""

from __future__ import annotations

import pytest


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
