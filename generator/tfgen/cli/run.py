"""`tfgen explain` and `tfgen run-local`: the pods an experiment becomes, and running them here."""

from __future__ import annotations

import functools
import sys

import click

from ..run import EXPLAIN_FORMATS
from .app import handle_errors, main

# --- explain / run-local: the pods an experiment becomes, and running them here -------------


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPLAIN_FORMATS),
    default="text",
    show_default=True,
    help="text: pod table and each pod's TF_CONFIG; json: for tools (exact TF_CONFIG "
    "strings); mermaid: a flowchart for READMEs and pull requests.",
)
@click.option(
    "--run",
    "run",
    metavar="SUFFIX",
    help="A sweep's run: only this one (default: every run, one after the other).",
)
@handle_errors
def explain(spec: str, fmt: str, run: str | None) -> None:
    """Show the pods of an experiment and the TF_CONFIG each one gets.

    Validates SPEC, renders the chart with the real helm and reads the TFJob the way the
    training operator (v1.9) does: pod and Service names, addresses, GPUs, and the exact
    TF_CONFIG it injects. A sweep is one TFJob per run, each explained in turn (JSON: a
    list).
    """
    from ..run.explain import explain_runs
    from ..run.formats import format_explanations

    click.echo(format_explanations(explain_runs(spec, run), fmt))


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
@click.option(
    "--run",
    "run",
    metavar="SUFFIX",
    help="The sweep's run to start (required when the sweep has more than one).",
)
@handle_errors
def run_local(
    spec: str, command: str | None, data_dir: str | None, timeout: float | None,
    tensorboard: bool, run: str | None,
) -> None:
    """Run every replica of an experiment as a local process.

    Each process gets the TF_CONFIG the operator would inject, with addresses on free
    127.0.0.1 ports and the mount path mapped to --data-dir. Output is prefixed with the pod
    name. When the chief/master (else worker 0) exits, the others are stopped, as
    cleanPodPolicy Running does; a failing replica ends the run. Exit status: the chief's,
    124 on timeout, 130 on Ctrl-C.
    """
    from ..run.runlocal import run_local as start

    result = start(
        spec,
        emit=click.echo,
        status=functools.partial(click.echo, err=True),
        command=command,
        data_dir=data_dir,
        timeout=timeout,
        tensorboard=tensorboard,
        run=run,
    )
    for note in result.notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    color = "green" if result.exit_code == 0 else "red"
    click.secho(f"tfgen: {result.reason}; data in {result.data_dir}", fg=color, err=True)
    sys.exit(result.exit_code)
