"""The package's structure is the pipeline: stages import only the stages before them, and no
module imports itself back through others. `python tests/test_architecture.py` prints the
import levels (level 1 imports no tfgen module; every other module stands one above the
highest module it imports)."""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import pytest
from structure import LAYERS, PACKAGE, SUBLAYERS, module_files


@cache
def imports() -> dict[str, set[str]]:
    """tfgen module -> the tfgen modules it imports (`from pkg import module` counts the
    module; `from pkg import name`, the package)."""
    modules: dict[str, Path] = {}
    for path in module_files():
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                named = {f"{target}.{alias.name}" for alias in node.names} & set(modules)
                found |= named or ({target} & set(modules))
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names} & set(modules)
        graph[name] = found - {name}
    return graph


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tfgen"


def levels() -> dict[str, int]:
    graph = imports()
    level: dict[str, int] = {}

    def of(module: str, path: tuple[str, ...] = ()) -> int:
        assert module not in path, "import cycle: " + " -> ".join((*path, module))
        if module not in level:
            level[module] = 1 + max((of(m, (*path, module)) for m in graph[module]), default=0)
        return level[module]

    for module in graph:
        of(module)
    return level


def test_there_is_no_import_cycle() -> None:
    assert len(levels()) >= 40  # every module was read


def test_stages_import_only_the_stages_after_them() -> None:
    graph = imports()
    wrong = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(module) in LAYERS and layer(target) in LAYERS
        and LAYERS.index(layer(target)) < LAYERS.index(layer(module))
    ]
    assert not wrong, wrong
    assert {layer(m) for m in graph} == {*LAYERS, "tfgen"}  # every stage was read


def sublayer(module: str) -> tuple[str, str] | None:
    """(stage, room) of a module inside a stage with rooms (`tfgen.gate.helm.batch`: gate,
    helm); None for any other module, and for the stage's own face (`tfgen.gate`)."""
    parts = module.split(".")
    return (parts[1], parts[2]) if len(parts) > 2 and parts[1] in SUBLAYERS else None


@pytest.mark.parametrize("stage", sorted(SUBLAYERS))
def test_rooms_import_only_the_rooms_after_them(stage: str) -> None:
    order = SUBLAYERS[stage]
    graph = imports()
    rooms = {module: where[1] for module in graph if (where := sublayer(module))
             and where[0] == stage}
    assert set(rooms.values()) == set(order), "every room is listed, and only those"
    wrong = [f"{module} imports {target}" for module, room in rooms.items()
             for target in graph[module] if target in rooms
             and order.index(rooms[target]) < order.index(room)]
    assert not wrong, wrong


def test_only_cli_imports_click() -> None:
    users = {path.parent.name for path in module_files()
             if "import click" in path.read_text(encoding="utf-8")}
    assert users == {"cli"}


if __name__ == "__main__":
    by_level: dict[int, list[str]] = {}
    for module, n in levels().items():
        by_level.setdefault(n, []).append(module.removeprefix("tfgen."))
    graph = imports()
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, "
          f"{len(by_level)} levels, no cycle")
    for n in sorted(by_level, reverse=True):
        print(f"  level {n}: {', '.join(sorted(by_level[n]))}")
    sys.exit(0)
