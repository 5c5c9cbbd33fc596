"""The package's structure as the tests read it: its modules, and its layers in import order.

`LAYERS` and `SUBLAYERS` have their home here so that the architecture test, which enforces
the order, and the docs test, which holds docs/design.md and generator/README.md to it, read
one list.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "generator" / "tfgen"
# Each stage may import the ones after it in this list, never one before it (`__main__`, for
# `python -m tfgen`, only starts the cli).
LAYERS = ("__main__", "cli", "live", "scaffold", "lifecycle", "importer", "run", "gate",
          "render", "validate", "repo", "problems", "errors", "words")
# Inside the two large stages, each folder (or module on top) may import the ones after it in
# its stage's list, never one before it: the stage's rooms, in the same order.
SUBLAYERS = {
    "gate": ("check", "result", "scope", "ledger", "diff", "revisions", "objects", "helm",
             "argo", "documents"),
    "validate": ("remembered", "experiments", "result", "across", "policy", "rules",
                 "experiment", "config", "schema", "yaml"),
}


def module_files() -> list[Path]:
    """Every Python file of the package, in path order."""
    return sorted(PACKAGE.rglob("*.py"))


def subpackages() -> list[str]:
    """The package's subpackages (folders with an `__init__.py`), relative to it."""
    return sorted(str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("*/__init__.py"))


def has_code(path: Path) -> bool:
    """Whether a module defines a function or a class (an `__init__.py` that only names what
    its package exports does not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for node in tree.body)
