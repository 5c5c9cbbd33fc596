"""No input shape makes validation crash: every node of a full spec replaced by values of
every other type still gives Problems (never an exception), each with a line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from tfgen.validate.config.load import load_config
from tfgen.validate.experiments import validate_paths

FULL = Path(__file__).parent / "fixtures" / "specs" / "valid" / "everything.yaml"
ODD_VALUES: list[Any] = [None, [], {}, "x", True]


def _pointers(data: Any, parts: tuple = ()):
    yield parts
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _pointers(value, (*parts, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _pointers(value, (*parts, index))


def _replace(data: Any, parts: tuple, value: Any) -> Any:
    out = copy.deepcopy(data)
    target = out
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = value
    return out


def test_every_node_with_every_odd_value(tmp_path: Path):
    data = yaml.safe_load(FULL.read_text())
    config = load_config([Path(__file__).resolve().parents[1]])
    files = []
    for n, parts in enumerate(p for p in _pointers(data) if p):
        for m, value in enumerate(ODD_VALUES):
            path = tmp_path / f"case-{n}-{m}.yaml"
            path.write_text(json.dumps(_replace(data, parts, value)))  # JSON is YAML
            files.append(path)
    result = validate_paths([tmp_path], config)
    assert len(result.files) == len(files) > 500
    # Every mutated file is still named after "everything", so each has at least that problem;
    # what matters is that nothing raised and every problem is located.
    assert len(result.problems) >= len(files)
    assert all(p.line >= 1 for p in result.problems)
