"""`tfgen explain` and `tfgen run-local`: the pods an experiment becomes, and running them here."""

from __future__ import annotations

import functools
import sys
from typing import Any

import click

from ..repo.layout import LOCAL_RUN_DIR, experiment_path, shown
from ..run import EXPLAIN_FORMATS
from .app import handle_errors, main

# --- explain / run-local: the pods an experiment becomes, and running them here -------------


@main.command()
@click.argument("experiment", metavar="EXPERIMENT")
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
def explain(experiment: str, fmt: str, run: str | None) -> None:
    """Show the pods of an experiment and the TF_CONFIG each one gets.

    EXPERIMENT is a spec file or the name of one in experiments/ (distributed-mnist for
    experiments/distributed-mnist.yaml). Validates it, renders the chart with the real helm
    and reads the TFJob the way the training operator (v1.9) does: pod and Service names,
    addresses, GPUs, and the exact TF_CONFIG it injects. A sweep is one TFJob per run, each
    explained in turn (JSON: a list).
    """
    from ..run.explain import explain_runs
    from ..run.formats import format_explanations

    click.echo(format_explanations(explain_runs(experiment_path(experiment), run), fmt))


@main.command("run-local")
@click.argument("experiment", metavar="EXPERIMENT")
@click.option(
    "--command",
    "command",
    metavar="CMD",
    help="Run this instead of the spec's command and args, e.g. "
    '"python train.py --steps 50".',
)
@click.option("--keep-args", is_flag=True,
              help="With --command: append the spec's args to it, as the pods get them.")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="Local folder standing in for the volume's mountPath (default: "
    f"{LOCAL_RUN_DIR}/<name>/ in the repository, kept and reused by the next run).",
)
@click.option("--clean", is_flag=True,
              help=f"Empty {LOCAL_RUN_DIR}/<name>/ before the run (never a --data-dir).")
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
def run_local(experiment: str, **options: Any) -> None:
    """Run every replica of an experiment as a local process.

    EXPERIMENT is a spec file or the name of one in experiments/. Each process gets the
    TF_CONFIG the operator would inject, with addresses on free 127.0.0.1 ports and the mount
    path mapped to the data folder. Output (stdout) is prefixed with the pod name. When the
    chief/master (else worker 0) exits, the others are stopped, as cleanPodPolicy Running
    does; a failing replica ends the run. Exit status: the chief's, 124 on timeout, 130 on
    Ctrl-C.
    """
    from ..run.runlocal import RunLocalOptions
    from ..run.runlocal import run_local as start

    # the options above are RunLocalOptions' fields, one for one
    result = start(experiment_path(experiment), RunLocalOptions(**options),
                   emit=click.echo, status=functools.partial(click.echo, err=True))
    for note in result.notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    data = shown(result.data_dir)
    if result.exit_code == 0:
        click.secho(f"tfgen: {result.reason}: the run worked; its data is in {data} (kept for "
                    "the next run). Next: `tfgen render`, then open a pull request",
                    fg="green", err=True)
    else:
        click.secho(f"tfgen: {result.reason}: the run failed; its data is in {data}. Next: "
                    "read the output above, fix, and run again", fg="red", err=True)
    sys.exit(result.exit_code)
