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


# --- explain / run-local: the pods an experiment becomes, and running them here -------------


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "mermaid"]),
    default="text",
    show_default=True,
    help="text: pod table and each pod's TF_CONFIG; json: for tools (exact TF_CONFIG "
    "strings); mermaid: a flowchart for READMEs and pull requests.",
)
@handle_errors
def explain(spec: str, fmt: str) -> None:
    """Show the pods of an experiment and the TF_CONFIG each one gets.

    Validates SPEC, renders the chart with the real helm and reads the TFJob the way the
    training operator (v1.9) does: pod and Service names, addresses, GPUs, and the exact
    TF_CONFIG it injects.
    """
    from .explain import explain_spec, format_explanation

    click.echo(format_explanation(explain_spec(spec), fmt))


@main.command("run-local")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option(
    "--command",
    "command",
    metavar="CMD",
    help="Run this instead of the spec's command (its args are kept), e.g. "
    '"python examples/mnist/main.py".',
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="Local folder standing in for the volume's mountPath (default: a new temp folder).",
)
@click.option("--timeout", type=float, metavar="SECONDS", help="Stop everything after this long.")
@click.option(
    "--tensorboard", is_flag=True, help="Also run TensorBoard on the local log dir, if installed."
)
@handle_errors
def run_local(
    spec: str, command: str | None, data_dir: str | None, timeout: float | None, tensorboard: bool
) -> None:
    """Run every replica of an experiment as a local process.

    Each process gets the TF_CONFIG the operator would inject, with addresses on free
    127.0.0.1 ports and the mount path mapped to --data-dir. Output is prefixed with the pod
    name. When the chief/master (else worker 0) exits, the others are stopped, as
    cleanPodPolicy Running does; a failing replica ends the run. Exit status: the chief's,
    124 on timeout, 130 on Ctrl-C.
    """
    from .runlocal import run_local as run

    result = run(
        spec,
        emit=click.echo,
        command=command,
        data_dir=data_dir,
        timeout=timeout,
        tensorboard=tensorboard,
    )
    for note in result.notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    color = "green" if result.exit_code == 0 else "red"
    click.secho(f"tfgen: {result.reason}; data in {result.data_dir}", fg=color, err=True)
    sys.exit(result.exit_code)
