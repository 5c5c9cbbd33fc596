"""The YAML writer: whatever it writes reads back as exactly the same data, and what YAML 1.1
(Helm, the ApplicationSet) would read as another type is quoted; the header escapes its source.

tests/test_yaml_types.py proves the same against the real helm."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from helpers import ARGOCD, examples, mnist_spec
from hypothesis import given, settings
from hypothesis import strategies as st
from tfgen.render.argo import argo_files
from tfgen.render.generated import dump_yaml, header, is_generated, is_plain, read_canonical
from tfgen.validate.rules.values import build_values

TRICKY = [
    "", " ", "yes", "no", "on", "off", "y", "N", "true", "False", "null", "~", "NULL",
    "1", "0", "-1", "1.5", "1e3", "0x1F", "0o17", "017", "1_000", "12:30", "1:20:30", ".inf",
    "-.inf", ".nan", "+1", "-", "--", "---", "...", "- x", "-x", "--data_dir=/a b", "a: b",
    "a:b", "a:", ":a", "#x", "a #b", "a#b", "@x", "`x", "!x", "&a", "*a", "%x", "|", ">",
    "[a]", "{a}", "a,b", "'q'", '"q"', "line\nbreak", "tab\there", "trailing ", " leading",
    "ünïcødé", "emoji 😀", "c1\x85ctl", "ls\u2028sep", "bom\ufeff", "del\x7f",
    "nvidia.com/gpu", "registry.cn-hangzhou.aliyuncs.com/x/y:gpu", "someone@example.com",
    "https://github.com/example-org/ml-experiments.git", "{{.name}}", "=", "a=b", "/",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "<<", "=value",
]


@pytest.mark.parametrize("text", TRICKY)
def test_strings_round_trip(text: str) -> None:
    document = {"key": text, text or "empty": [text], "list": [{"k": text, "n": None}]}
    assert yaml.safe_load(dump_yaml(document)) == document


def test_structures_round_trip() -> None:
    data: dict[str, Any] = {
        "a": {}, "b": [], "c": [[1, 2], [], [{"x": [True, False, None, 0, -3, 2.5]}]],
        "d": [{"e": {"f": [{}]}}], "g": {"h": {"i": {"j": "k"}}},
    }
    assert yaml.safe_load(dump_yaml(data)) == data
    values = build_values(mnist_spec())
    assert yaml.safe_load(dump_yaml(values)) == values


def test_header() -> None:
    text = header(["experiments/x.yaml"]) + "a: 1\n"
    assert is_generated(text) and not is_generated("a: 1\n" + text)
    assert "do not edit" in text.lower() and "tfgen render" in text


# Read by go-yaml v2 (Helm, the ApplicationSet) as booleans, nulls or numbers: never plain.
YAML11_NOT_STRINGS = [
    "y", "Y", "n", "N", "yes", "Yes", "NO", "on", "On", "OFF", "true", "FALSE", "null", "Null",
    "~", "1e3", "1e-4", "0o17", "0x1F", "08", "017", "1_000", "60:30", "190:20:30.15", ".inf",
    "-.Inf", ".nan", "2001-12-14", "+1", "-1", ".5", "<<", "=", "", "0b101",
]


@pytest.mark.parametrize("text", YAML11_NOT_STRINGS)
def test_what_yaml_1_1_reads_as_another_type_is_quoted(text: str) -> None:
    assert dump_yaml({"k": text}) == f'k: "{text}"\n'
    assert dump_yaml([text]) == f'- "{text}"\n'


@pytest.mark.parametrize("text", ["yEs", "nO", "oN", "tRUE", "nULL"])
def test_bool_and_null_words_are_quoted_in_any_letter_case(text: str) -> None:
    # go-yaml v2 knows three spellings of each; quoting every case needs no list of them.
    assert dump_yaml({"k": text}) == f'k: "{text}"\n'


@pytest.mark.parametrize("text", [
    "a", "nvidia.com/gpu", "/training", "registry.example.com/x/y:gpu", "IfNotPresent",
    "someone@example.com", "https://github.com/example-org/ml-experiments.git", "a=b", "yy",
])
def test_plain_strings_stay_plain(text: str) -> None:
    assert dump_yaml({"k": text}) == f"k: {text}\n"


@pytest.mark.parametrize(("value", "written"), [
    (True, "true"), (False, "false"), (0, "0"), (-7, "-7"), (10**20, "100000000000000000000"),
    (1.5, "1.5"), (1e-05, "1.0e-05"), (1e20, "1.0e+20"), (2.5e-300, "2.5e-300"),
    (float("inf"), ".inf"), (float("-inf"), "-.inf"), (None, "null"),
])
def test_numbers_and_booleans_are_written_plainly(value: Any, written: str) -> None:
    assert dump_yaml({"k": value}) == f"k: {written}\n"
    assert yaml.safe_load(f"k: {written}\n") == {"k": value}


def test_nan_reads_back_as_nan() -> None:
    loaded = yaml.safe_load(dump_yaml({"k": float("nan")}))["k"]
    assert isinstance(loaded, float) and loaded != loaded


@pytest.mark.parametrize("source", [
    "experiments/a\nkind: Secret.yaml", "experiments/a\rb.yaml", "experiments/a\u2028b.yaml",
    "experiments/a\x85b.yaml", "experiments/a b.yaml", 'experiments/"q".yaml',
])
def test_header_escapes_the_source_it_names(source: str) -> None:
    text = header([source, "tfgen.yaml"]) + "a: 1\n"
    lines = text.split("\n")
    assert len(lines) == 5 and all(line.startswith("#") for line in lines[:3])
    assert text.isascii()
    assert yaml.safe_load(text) == {"a": 1}
    shown = lines[1].removeprefix("# Source: ").removesuffix(", tfgen.yaml")
    assert json.loads(shown) == source


def test_header_shows_ordinary_paths_as_they_are() -> None:
    assert header(["experiments/x-1.yaml", "tfgen.yaml"]).split("\n")[1] == (
        "# Source: experiments/x-1.yaml, tfgen.yaml")


@settings(max_examples=examples(400), deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
))
def test_pyyaml_reads_back_exactly_what_was_written(data: Any) -> None:
    assert yaml.safe_load(dump_yaml(data)) == data


@settings(max_examples=examples(1000), deadline=None)
@given(st.text())
def test_any_text_reads_back_as_itself(text: str) -> None:
    assert yaml.safe_load(dump_yaml({text: [text]})) == {text: [text]}
    if is_plain(text):
        assert yaml.safe_load(text) == text


def test_argo_files_quote_what_tfgen_yaml_holds() -> None:
    # tfgen.yaml is validated elsewhere; the templates must still write any text safely.
    hostile = "https://example.com/r.git\u2028kind: Secret\x85\x9f\"#"
    argocd = {**ARGOCD, "repoURL": hostile, "project": "p\nq: 1"}
    for generated in argo_files(argocd):
        assert "\u2028" not in generated.content and "\x85" not in generated.content
        data = yaml.safe_load(generated.content)
        assert isinstance(data, dict)
        if data["kind"] == "ApplicationSet":
            assert data["spec"]["template"]["spec"]["source"]["repoURL"] == hostile
            assert data["spec"]["template"]["spec"]["project"] == "p\nq: 1"


def test_read_canonical_accepts_only_the_writers_form() -> None:
    data = {"name": "y", "n": [1, True, None, "1e3"], "m": {}}
    text = header(["experiments/x.yaml"]) + dump_yaml(data)
    assert read_canonical(text) == data
    assert read_canonical(dump_yaml(data)) == data  # the header is optional
    for other in (
        text.replace('name: "y"', "name: y"),  # what helm reads as true
        text.replace('name: "y"', "name: 'y'"),  # same data, other quoting
        text + "\n",  # a trailing blank line
        "\ufeff" + text,  # a byte-order mark
        text.replace("# Source: experiments/x.yaml", "# Source: x\u2028name: other"),
        text.replace("# Source: experiments/x.yaml", "# Source: x\x85name: other"),
        "{name: \"y\"}\n",  # flow style
        "a: &x 1\nb: *x\n",  # an alias
        "a: [\n",  # not YAML
        "",  # nothing
    ):
        assert read_canonical(other) is None, other
