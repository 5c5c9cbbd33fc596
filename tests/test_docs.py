"""Every CLI command has help text and is documented in README.md; iterating `main.commands`
means commands added later are covered without touching this test."""

from __future__ import annotations

from pathlib import Path

import pytest
from tfgen.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
COMMANDS = sorted(main.commands)


def test_there_are_commands():
    assert "validate" in COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help(runner, name):
    command = main.commands[name]
    assert command.help and command.help.strip()
    result = runner.invoke(main, [name, "--help"], catch_exceptions=False)
    assert result.exit_code == 0
    assert command.help.strip().splitlines()[0] in result.output


@pytest.mark.parametrize("name", COMMANDS)
def test_command_is_in_readme(name):
    assert f"tfgen {name}" in README, f"README.md does not mention `tfgen {name}`"
