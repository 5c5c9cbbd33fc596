"""Every CLI command has help text and is documented in README.md; iterating `main.commands`
means commands added later are covered without touching this test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


CODE = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.S)
INVOCATION = re.compile(r"\btfgen ([a-z][a-z-]*)([^#\n]*)")


def readme_invocations() -> list[tuple[str, tuple[str, ...]]]:
    """Every `tfgen COMMAND ...` in the README's code (blocks and inline spans), with the
    options written after it (comments left out)."""
    found = []
    for block, span in CODE.findall(README):
        for line in (block or span).splitlines():
            code = re.sub(r"(^|\s)#.*", "", line)  # a shell or YAML comment is prose
            for name, rest in INVOCATION.findall(code):
                found.append((name, tuple(re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest))))
    return found


def test_the_readme_shows_commands():
    assert len(readme_invocations()) > 20


@pytest.mark.parametrize(("name", "options"), readme_invocations(),
                         ids=lambda value: value if isinstance(value, str) else " ".join(value))
def test_every_readme_invocation_is_real(name, options):
    assert name in main.commands, f"README.md shows `tfgen {name}`, which is no command"
    known = {opt for param in main.commands[name].params for opt in param.opts}
    assert set(options) <= known, f"`tfgen {name}` has no {sorted(set(options) - known)}"


def test_shell_completion_as_documented():
    for shell in ("bash", "zsh", "fish"):
        assert f"_TFGEN_COMPLETE={shell}_source tfgen" in README
    # click answers under the program name it completes: the installed `tfgen` script
    tfgen = Path(sys.executable).parent / "tfgen"
    script = subprocess.run([str(tfgen)], env={**os.environ, "_TFGEN_COMPLETE": "bash_source"},
                            capture_output=True, text=True, check=False)
    assert script.returncode == 0, script.stderr
    assert "complete -o nosort -F _tfgen_completion tfgen" in script.stdout


def test_readme_keeps_setup_and_test_commands():
    assert "make setup" in README and "make test" in README
    assert "make test" in (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
