"""Every CLI command has help text and is documented in README.md or its guides (docs/);
iterating `main.commands` means commands added later are covered without touching this test.
Every command they show is a real one with real options, and every link between them, and to
the repository's files, leads somewhere. The maps stay true too:
generator/README.md's module table names exactly the package's modules, tests/README.md's map
exactly the test files, and the import order written in docs/design.md and generator/README.md
is `structure.LAYERS`, the one the architecture test enforces."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from structure import LAYERS, PACKAGE, SUBLAYERS, has_code, module_files, subpackages
from tfgen.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The README and the guides it links to, which a reader takes for one text.
GUIDES = sorted((ROOT / "docs").glob("*.md"))
DOCS = "\n".join([README, *(path.read_text(encoding="utf-8") for path in GUIDES)])
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
    assert f"tfgen {name}" in DOCS, f"README.md and docs/ do not mention `tfgen {name}`"
    assert f"tfgen {name}" in README or name in ("install-helm", "completion"), (
        f"README.md does not name `tfgen {name}` in its paths")


LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


@pytest.mark.parametrize("doc", [ROOT / "README.md", *GUIDES], ids=lambda p: p.name)
def test_every_link_leads_somewhere(doc: Path):
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        rel, _, anchor = target.partition("#")
        path = (doc.parent / rel).resolve() if rel else doc
        assert path.exists(), f"{doc.relative_to(ROOT)}: the link ({target}) leads nowhere"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), (
                f"{doc.relative_to(ROOT)}: ({target}) names no heading of {rel or doc.name}")


CODE = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.S)
INVOCATION = re.compile(r"\btfgen ([a-z][a-z-]*)([^#\n]*)")


def readme_invocations() -> list[tuple[str, tuple[str, ...]]]:
    """Every `tfgen COMMAND ...` in the code of the README and its guides (blocks and inline
    spans), with the
    options written after it (comments left out)."""
    found = []
    for block, span in CODE.findall(DOCS):
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
    assert name in main.commands, f"the docs show `tfgen {name}`, which is no command"
    known = {opt for param in main.commands[name].params for opt in param.opts}
    assert set(options) <= known, f"`tfgen {name}` has no {sorted(set(options) - known)}"


def test_shell_completion_as_documented():
    for shell in ("bash", "zsh", "fish"):
        assert f"_TFGEN_COMPLETE={shell}_source tfgen" in DOCS
    # click answers under the program name it completes: the installed `tfgen` script
    tfgen = Path(sys.executable).parent / "tfgen"
    script = subprocess.run([str(tfgen)], env={**os.environ, "_TFGEN_COMPLETE": "bash_source"},
                            capture_output=True, text=True, check=False)
    assert script.returncode == 0, script.stderr
    assert "complete -o nosort -F _tfgen_completion tfgen" in script.stdout


def test_readme_keeps_setup_and_test_commands():
    assert "make setup" in README and "make test" in README and "make test-fast" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text()


# --- the maps of the package and of the tests --------------------------------------------------

ROW = re.compile(r"\| (\*\*`(?P<stage>[\w./]+)`\*\*|`(?P<name>[\w./]+)`) \| \S.*\|")


def module_table() -> list[str]:
    """The first column of generator/README.md's `| module | its one job |` table, each cell
    one name in backticks (bold for a stage), each row with its job written."""
    lines = (ROOT / "generator" / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| module | its one job |")
    assert lines[start + 1] == "| --- | --- |"
    names = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = ROW.fullmatch(line)
        assert row, f"generator/README.md: a row that is not | `name` | its job |: {line}"
        names.append(row["stage"] or row["name"])
    return names


def package_modules() -> list[str]:
    """What the table must name: every subpackage (`gate/`, its `__init__.py` the stage's
    exports) and every module, an `__init__.py` only when it holds code of its own."""
    files = [str(path.relative_to(PACKAGE)) for path in module_files()
             if path.name != "__init__.py" or (path.parent != PACKAGE and has_code(path))]
    return sorted([f"{name}/" for name in subpackages()] + files)


def test_the_module_table_names_every_module_once() -> None:
    listed = module_table()
    assert listed and package_modules()
    assert len(listed) == len(set(listed)), "named twice: " + ", ".join(
        sorted({name for name in listed if listed.count(name) > 1}))
    assert sorted(listed) == package_modules(), (
        f"missing from generator/README.md: {sorted(set(package_modules()) - set(listed))}; "
        f"no such module: {sorted(set(listed) - set(package_modules()))}")


def mapped_test_files() -> list[str]:
    """The test files tests/README.md describes: those named, in backticks, before the colon
    of a list item (an item runs on over its indented lines)."""
    text = (ROOT / "tests" / "README.md").read_text(encoding="utf-8")
    items = re.findall(r"^- (.*(?:\n  .*)*)", text, re.M)
    named = []
    for item in items:
        subject, colon, _ = item.partition(": ")
        assert colon, f"tests/README.md: an item without `<files>: <what they test>`: {item}"
        named += re.findall(r"`(test_\w+\.py)`", subject)
    return named


def test_the_test_map_names_every_test_file_once() -> None:
    named = mapped_test_files()
    present = sorted(path.name for path in (ROOT / "tests").glob("test_*.py"))
    assert named and present
    assert len(named) == len(set(named)), "described twice: " + ", ".join(
        sorted({name for name in named if named.count(name) > 1}))
    assert sorted(named) == present, (
        f"missing from tests/README.md: {sorted(set(present) - set(named))}; "
        f"no such file: {sorted(set(named) - set(present))}")


ORDER = re.compile(r"`(\w+(?: > \w+)+)`")


@pytest.mark.parametrize("doc", ["docs/design.md", "generator/README.md"])
def test_the_written_import_order_is_the_enforced_one(doc: str) -> None:
    orders = ORDER.findall((ROOT / doc).read_text(encoding="utf-8"))
    assert len(orders) == 1, f"{doc}: one `a > b > ...` import order, not {orders}"
    [order] = orders
    assert tuple(order.split(" > ")) == LAYERS, f"{doc}: `{order}`"


@pytest.mark.parametrize("doc", ["docs/design.md", "generator/README.md"])
@pytest.mark.parametrize("stage", sorted(SUBLAYERS))
def test_the_written_room_order_is_the_enforced_one(doc: str, stage: str) -> None:
    orders = re.findall(rf"`{stage}: (\w+(?: > \w+)+)`", (ROOT / doc).read_text(encoding="utf-8"))
    assert len(orders) == 1, f"{doc}: one `{stage}: a > b > ...` order of its rooms, not {orders}"
    assert tuple(orders[0].split(" > ")) == SUBLAYERS[stage], f"{doc}: `{stage}: {orders[0]}`"
