"""The `tfgen` command line: a thin layer over the library.

Each command parses its options, calls one library function and prints its result. This is the
only module that imports click, prints or exits. Exit codes: 0 success, 1 problems found in
the input (or a user error), 2 usage error or a missing tool (helm, git).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from . import __version__
from .errors import TfgenError
from .report import FORMATS, format_problems
from .validate import validate_repo

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Turn a TfgenError into one red line on stderr and its exit code; bugs keep tracebacks."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TfgenError as exc:
            if exc.message:
                click.secho(f"error: {exc.message}", fg="red", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tfgen")
def main() -> None:
    """Distributed TensorFlow on Kubernetes from Git.

    One reviewed file per experiment (experiments/<name>.yaml) becomes a Kubeflow TFJob, a NAS
    volume and a TensorBoard, synced to the cluster by Argo CD.

    Exit codes: 0 success, 1 problems found, 2 usage error or missing tool.
    """


# --- tfgen validate -------------------------------------------------------------------------


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text for people, json for tools, github for pull-request annotations.",
)
@handle_errors
def validate(paths: tuple[Path, ...], fmt: str) -> None:
    """Check experiment specs: strict YAML, the schema and the semantic rules.

    PATHS are spec files or directories (their *.yaml/*.yml); the default is experiments/ at
    the repository root (the nearest directory holding tfgen.yaml). Every problem of every file
    is reported at once as path:line:col: $.pointer: message (hint).

    Exit codes: 0 all valid, 1 problems found, 2 usage error.
    """
    result = validate_repo(paths)
    if fmt == "json":
        click.echo(format_problems(result.problems, "json"))
    elif result.problems:
        click.echo(format_problems(result.problems, fmt))
    if fmt == "text":
        click.echo(result.summary())
    else:
        click.echo(result.summary(), err=True)
    if not result.ok:
        sys.exit(1)
