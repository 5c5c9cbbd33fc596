"""The package's structure as the tests read it: its modules, and its layers in import order.

`LAYERS` has its home here so that the architecture test, which enforces the order, and the
docs test, which holds docs/design.md and generator/README.md to it, read one list.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "generator" / "tfgen"
# Each stage may import the ones after it in this list, never one before it (`__main__`, for
# `python -m tfgen`, only starts the cli).
LAYERS = ("__main__", "cli", "scaffold", "lifecycle", "importer", "run", "gate", "render",
          "validate", "repo", "problems", "errors", "words")


def module_files() -> list[Path]:
    """Every Python file of the package, in path order."""
    return sorted(PACKAGE.rglob("*.py"))

