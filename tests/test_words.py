"""words.py: the one rule for counting things in sentences."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tfgen.words import counted, plural


@pytest.mark.parametrize(("count", "noun", "form", "expected"), [
    (0, "experiment", None, "0 experiments"),
    (1, "experiment", None, "1 experiment"),
    (2, "experiment", None, "2 experiments"),
    (1, "process", "processes", "1 process"),
    (3, "process", "processes", "3 processes"),
])
def test_counted(count: int, noun: str, form: str | None, expected: str) -> None:
    assert counted(count, noun, form) == expected


@given(st.integers(min_value=0, max_value=10**9), st.from_regex(r"[a-z]{1,12}", fullmatch=True))
def test_singular_only_for_one(count: int, noun: str) -> None:
    assert counted(count, noun) == f"{count} {plural(count, noun)}"
    assert plural(count, noun) == (noun if count == 1 else noun + "s")
