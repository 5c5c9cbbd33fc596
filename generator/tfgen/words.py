"""How tfgen's sentences count things: one home for singular and plural, so that every summary
says "1 experiment" and "2 experiments", never "experiment(s)"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`3 experiments`, `1 experiment`; `plural` for nouns that do not just take an s
    (`counted(2, "process", "processes")`)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """The noun alone, in the form `count` calls for (`2 of 3 files`)."""
    return noun if count == 1 else plural_form or noun + "s"
