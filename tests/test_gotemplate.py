"""The ApplicationSet's Go-template placeholders (`gate/argo/gotemplate.py`): a template compiled
once and filled once per generator file gives what filling each string of it gives, in the
template's order, and no filled Application shares a part that holds a placeholder."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tfgen.gate.argo import gotemplate

PARAMS = {"name": "run-1", "n": 3, "flag": True, "path": {"basename": "run-1"}}
OTHER_PARAMS = {"name": "run-2", "n": 4, "flag": False, "path": {"basename": "run-2"}}
# each placeholder spelling the resolver understands, and what it prints for PARAMS
PLACEHOLDERS = [("{{.name}}", "run-1"), ("{{ .path.basename }}", "run-1"), ("{{-.n-}}", "3"),
                ("{{.flag}}", "true")]
LITERAL = st.text(st.sampled_from("ab-_/. "), max_size=4)


@st.composite
def texts(draw: st.DrawFn) -> tuple[str, str]:
    """A string of literals and placeholders, and that string filled from PARAMS."""
    pieces = draw(st.lists(st.one_of(LITERAL.map(lambda text: (text, text)),
                                     st.sampled_from(PLACEHOLDERS)), max_size=4))
    return "".join(p[0] for p in pieces), "".join(p[1] for p in pieces)


def _pairs(children: st.SearchStrategy[tuple[Any, Any]]) -> st.SearchStrategy[tuple[Any, Any]]:
    as_list = st.lists(children, max_size=4).map(
        lambda items: ([t for t, _ in items], [e for _, e in items]))
    as_dict = st.dictionaries(LITERAL, children, max_size=4).map(
        lambda items: ({k: t for k, (t, _) in items.items()},
                       {k: e for k, (_, e) in items.items()}))
    return st.one_of(as_list, as_dict)


# (template, the template filled from PARAMS): nested mappings and lists of texts and scalars
TEMPLATES = st.recursive(
    st.one_of(texts(), st.integers(), st.booleans(), st.none()).map(
        lambda leaf: leaf if isinstance(leaf, tuple) else (leaf, leaf)),
    _pairs, max_leaves=30)


def fill(template: Any, params: dict[str, Any]) -> Any:
    """`template` compiled and filled once."""
    return gotemplate.compiled(template)(params)


@given(TEMPLATES)
def test_a_compiled_template_fills_every_placeholder_in_the_templates_order(
    case: tuple[Any, Any],
) -> None:
    template, expected = case
    # json.dumps keeps the order of the keys: the filled mapping must keep the template's
    assert json.dumps(gotemplate.compiled(template)(PARAMS)) == json.dumps(expected)


@given(TEMPLATES)
def test_filling_again_changes_neither_the_template_nor_what_was_filled_before(
    case: tuple[Any, Any],
) -> None:
    template, expected = case
    before = copy.deepcopy(template)
    filling = gotemplate.compiled(template)
    first = filling(PARAMS)
    filling(OTHER_PARAMS)
    assert first == expected
    assert template == before


def test_a_template_the_resolver_does_not_understand_is_refused() -> None:
    assert fill({"a": "x-{{ .name }}-{{.path.basename}}"},
                {"name": "n", "path": {"basename": "b"}}) == {"a": "x-n-b"}
    with pytest.raises(gotemplate.TemplateError, match="unsupported"):
        fill("{{ default .name \"x\" }}", {"name": "n"})
    with pytest.raises(gotemplate.TemplateError, match="no entry for key 'owner'"):
        fill("{{.owner}}", {"name": "n"})
    with pytest.raises(gotemplate.TemplateError, match="is not a scalar"):
        fill({"a": ["{{.path}}"]}, {"path": {"basename": "b"}})
    # a value that brings its own braces is text: Go parses the template, never the values
    assert fill("{{.name}}-{{.n}}", {"name": "{{.other}}", "n": "}}"}) == "{{.other}}-}}"


def test_a_placeholder_in_a_key_is_filled_too() -> None:
    assert fill({"{{.name}}": {"k": "{{.n}}"}, "z": 1}, PARAMS) == \
        {"run-1": {"k": "3"}, "z": 1}
