"""The loader's two ways to read YAML agree: the fast event path (plain documents, no positions
until asked) and the careful node walk (everything else, every refusal) give the same data and
the same positions, and a plain spec really takes the fast path."""

from __future__ import annotations

from pathlib import Path

import pytest
from tfgen.validate.yaml import nodes
from tfgen.validate.yaml.loader import LoadError, _load_plain, load_bytes, load_text
from tfgen.validate.yaml.nodes import load_nodes as _load_nodes

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


def merge_key_bomb(levels: int) -> str:
    """Ten keys, then each level merging the one before ten times: 10^levels keys to expand."""
    lines = ["a0: &a0 {" + ", ".join(f"k{i}: {i}" for i in range(10)) + "}"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} {{<<: [" + ", ".join([f"*a{level - 1}"] * 10) + "]}")
    return "\n".join(lines) + "\n"


def test_a_merge_key_bomb_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    text = merge_key_bomb(9)
    assert len(text) < 1024
    # Each merge resolved is counted: the budget must stop them long before the 10^9 merges
    # the bomb asks for (before the budget counted merges, it took minutes).
    merges = 0
    resolve = nodes._Walker._merged_pairs

    def counting(self: nodes._Walker, node: nodes.MappingNode) -> object:
        nonlocal merges
        merges += 1
        assert merges <= nodes.MAX_NODES, "merge keys resolved past the node budget"
        return resolve(self, node)

    monkeypatch.setattr(nodes._Walker, "_merged_pairs", counting)
    with pytest.raises(LoadError, match=r"too many keys after expanding YAML merge keys"):
        load_text(text, "bomb.yaml")
    assert merges > 0  # the careful walk was the one that refused it
    assert load_text(merge_key_bomb(1), "small.yaml").data["a1"] == {
        f"k{i}": i for i in range(10)}  # an honest merge still works


YAML11 = [
    # text, what YAML 1.1 reads, the kind of number
    ("010", "8", "an octal number"),
    ("-012", "-10", "an octal number"),
    ("0x10", "16", "a hexadecimal number"),
    ("0b101", "5", "a binary number"),
    ("1:30", "90", "a sexagesimal (base 60) number"),
    ("1_000", "1000", "a number with underscores"),
    ("yes", "true", "a boolean"),
    ("No", "false", "a boolean"),
    ("ON", "true", "a boolean"),
    ("off", "false", "a boolean"),
]


@pytest.mark.parametrize("text, value, kind", YAML11, ids=[t for t, _, _ in YAML11])
def test_yaml11_numbers_and_booleans_are_refused_with_their_value(
    text: str, value: str, kind: str
) -> None:
    with pytest.raises(LoadError) as caught:
        load_text(f"spec:\n  roles:\n    - gpus: {text}\n", "s.yaml")
    error = caught.value
    assert (error.line, error.col, error.pointer) == (3, 13, "$.spec.roles[0].gpus")
    assert error.reason == f"`{text}` is {kind} in YAML 1.1, read as {value}"
    assert error.hint == f'write {value}, or "{text}" if you meant a string'
    assert str(error).startswith("s.yaml:3:13: $.spec.roles[0].gpus: `")
    quoted = load_text(f'spec: {{gpus: "{text}"}}\n', "s.yaml")
    assert quoted.data == {"spec": {"gpus": text}}  # quoted, it is the text


def test_plain_numbers_and_booleans_are_what_everyone_reads() -> None:
    text = "a: 10\nb: -5\nc: 0\nd: true\ne: False\nf: +3\ng: 1.5\nh: y\n"
    assert _load_plain(text) == {"a": 10, "b": -5, "c": 0, "d": True, "e": False, "f": 3,
                                 "g": 1.5, "h": "y"}


def test_keys_are_their_text() -> None:
    data = load_text("m:\n  yes: 1\n  0x10: 2\n  010: 3\n  null: 4\n", "k.yaml").data
    assert data == {"m": {"yes": 1, "0x10": 2, "010": 3, "null": 4}}


def test_a_lone_merge_key_is_the_text() -> None:
    # as Helm and Kubernetes read it (go-yaml v2); PyYAML alone would fail on it
    assert load_text("spec:\n  args:\n  - <<\n  - --x\n", "m.yaml").data == {
        "spec": {"args": ["<<", "--x"]}}


@pytest.mark.parametrize("text, reason", [
    ("a: [" + ", ".join(["1"] * nodes.MAX_NODES) + "]\n", "too many values"),
    ("a: " + "[" * (nodes.MAX_DEPTH + 1) + "]" * (nodes.MAX_DEPTH + 1) + "\n", "nested more than"),
], ids=["many-values", "deep"])
def test_a_plain_document_past_the_budgets_is_left_to_the_careful_walk(
    text: str, reason: str
) -> None:
    assert _load_plain(text) is None
    with pytest.raises(LoadError, match=reason):
        load_text(text, "big.yaml")
    assert _load_plain("a: [" + ", ".join(["1"] * 100) + "]\n") == {"a": [1] * 100}
