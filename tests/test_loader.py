"""The loader's two ways to read YAML agree: the fast event path (plain documents, no positions
until asked) and the careful node walk (everything else, every refusal) give the same data and
the same positions, and a plain spec really takes the fast path."""

from __future__ import annotations

from pathlib import Path

import pytest
from tfgen.validate.loader import LoadError, _load_plain, load_bytes, load_text
from tfgen.validate.nodes import load_nodes as _load_nodes

REPO = Path(__file__).resolve().parents[1]
SPECS = sorted(
    [*(REPO / "experiments").glob("*.yaml"), *(REPO / "tests/fixtures/specs").rglob("*.yaml")]
)

SNIPPETS = [
    "a: 2024-01-01\nb: 2024-13-45\n",  # dates stay text, impossible ones too
    "a: 1:30\nb: 0x1F\nc: 0o17\nd: 1_000\ne: .inf\nf: -.NaN\ng: 1e3\nh: 1.5e3\n",
    "yes: no\n1: x\n~: 1\n3.5: f\nnull: n\n0x10: hex\n",
    "a:\nb: ''\nc: \"\"\nd: ~\ne: 'true'\nf: true\n",
    "a: {b: [1, {c: [], d: {}}], e: [[1, 2], [3]]}\n",
    "a: !!str 12\n",  # tags: careful path
    "a: &x {b: 1}\nc: *x\n",  # anchors: careful path
    "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n",  # merge keys: careful path
    "a: 1\na: 2\n",  # duplicate key
    "1: a\n0x1: b\n",  # duplicate after stringification
    "? [a]\n: b\n",  # a list as a key
    "a: 1\n---\nb: 2\n",  # two documents
    "- a\n",  # not a mapping
    "a: [1, 2\n",  # broken YAML
    "a: !!binary aGk=\n",
]


def _careful(text: str) -> object:
    try:
        return _load_nodes(text, "t.yaml").data
    except LoadError as exc:
        return exc.reason


@pytest.mark.parametrize("text", SNIPPETS)
def test_fast_path_agrees_or_defers(text: str) -> None:
    fast = _load_plain(text)
    if fast is not None:
        assert fast == _careful(text)
    try:
        loaded: object = load_text(text, "t.yaml").data
    except LoadError as exc:
        loaded = exc.reason
    assert loaded == _careful(text)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_specs_load_the_same_both_ways(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fast = _load_plain(text)
    try:
        careful = _load_nodes(text, "t.yaml")
    except LoadError:
        assert fast is None
        return
    if fast is not None:
        assert fast == careful.data
    document = load_text(text, "t.yaml")
    assert document.values == careful.values
    assert document.keys == careful.keys


def test_there_are_specs_to_load() -> None:
    """The test above has cases: the bundled examples and the spec fixtures."""
    bundled = [p for p in SPECS if p.parent == REPO / "experiments"]
    assert len(bundled) >= 3 and len(SPECS) - len(bundled) >= 60


def test_plain_specs_take_the_fast_path() -> None:
    paths = sorted((REPO / "experiments").glob("*.yaml"))
    assert len(paths) >= 3
    for path in paths:
        assert _load_plain(path.read_text(encoding="utf-8")) is not None, path.name
    assert _load_plain("a: &x 1\nb: *x\n") is None
    assert _load_plain("a: 1\na: 2\n") is None


def test_positions_are_recorded_on_first_use() -> None:
    document = load_bytes(b"a:\n  b: [x, {c: 1}]\n", "t.yaml")
    assert document.data == {"a": {"b": ["x", {"c": 1}]}}
    assert document.locate(("a", "b", 1, "c")) == (2, 14)
    assert document.locate(("a", "b"), key=True) == (2, 3)
