"""The YAML writer: whatever it writes reads back as exactly the same data."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from helpers import mnist_spec
from tfgen.render.generated import dump_yaml, header, is_generated
from tfgen.render.values import build_values

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
