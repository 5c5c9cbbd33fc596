"""`tfgen status`, `logs` and `tensorboard`: the read side, after the merge."""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import click

from ..live import STATUS_FORMATS
from ..words import counted
from .app import handle_errors, main

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen: a live table redrawn in place


@dataclass(frozen=True)
class Where:
    """--kubeconfig and --context, as kubectl takes them."""

    kubeconfig: str | None
    context: str | None

    def connect(self, context: str | None = None) -> Any:
        """The cluster of `context` (a cluster's own, from tfgen.yaml), else of --context."""
        from ..live import connect

        # $KUBECONFIG may list several files (kubectl merges them); the client reads the first
        first = self.kubeconfig.split(":")[0] if self.kubeconfig else None
        return connect(first, context or self.context)

    def connections(self) -> Any:
        """Argo CD's cluster (--context) and, when asked, each cluster's own context."""
        from ..live import Connections

        return Connections(self.connect, self.connect())


def cluster_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--kubeconfig and --context, given to the command as one `where` (a `Where`)."""
    @click.option("--kubeconfig", metavar="FILE", envvar="KUBECONFIG",
                  help="The kubeconfig to read (default: $KUBECONFIG, then ~/.kube/config).")
    @click.option("--context", metavar="NAME",
                  help="The kubeconfig context of Argo CD's cluster, and of each cluster "
                  "tfgen.yaml gives no context of its own (default: the current context).")
    @functools.wraps(func)
    def wrapper(*args: Any, kubeconfig: str | None, context: str | None, **kwargs: Any) -> Any:
        return func(*args, where=Where(kubeconfig, context), **kwargs)
    return wrapper


@main.command()
@click.argument("experiments", nargs=-1, metavar="[EXPERIMENT]...")
@click.option("--watch", "-w", is_flag=True,
              help="Keep showing changes until Ctrl-C: the table redrawn in place on a "
              "terminal, a time-stamped line per change into a pipe.")
@click.option("--format", "fmt", type=click.Choice(STATUS_FORMATS), default="text",
              show_default=True, help="text: a table with the reasons under each line; json: "
              "for tools (with the number of API calls made).")
@cluster_options
@handle_errors
def status(experiments: tuple[str, ...], watch: bool, fmt: str, where: Where) -> None:
    """Show what runs of each experiment on the cluster.

    One line per experiment (every one of the repository by default; a sweep's runs under it):
    its Argo CD Application's sync and health, the phase of its run (not yet synced, queued,
    admitted, starting, running, succeeded, failed, suspended, retired), pods ready per role,
    restarts, GPUs held and age. Under it, why it waits or failed, in plain words: Kueue's
    reason, the scheduler's, an image that cannot be pulled, a claim not bound, a sync that
    failed, or where the cluster differs from the spec.

    Reads the cluster with one list call per kind and namespace; --watch follows watches.
    Exit codes: 0 every experiment shown is healthy or done, 1 some failed or cannot be
    admitted, 2 a usage error or no cluster reached.
    """
    from ..live import select, statuses, updates
    from ..live.views import as_json, change_lines, summary, table

    selection = select(experiments)
    if selection.invalid:
        click.echo(f"{counted(selection.invalid, 'spec')} left out: they do not validate "
                   "(`tfgen validate`)", err=True)
    clusters = where.connections()
    if not watch:
        shown = statuses(clusters, selection)
        click.echo(as_json(shown, clusters.calls) if fmt == "json" else table(shown))
        if fmt == "text":
            click.echo(summary(shown), err=True)
        sys.exit(1 if any(s.failing for s in shown) else 0)
    stop = threading.Event()
    live = sys.stdout.isatty() and fmt == "text"
    before: dict[str, str] = {}
    failing = False
    try:
        for shown in updates(clusters, selection, stop):
            failing = any(s.failing for s in shown)
            if fmt == "json":
                click.echo(as_json(shown, clusters.calls, indent=None))  # a line each
            elif live:
                click.echo(f"{CLEAR}{table(shown)}\n\n{summary(shown)}  (Ctrl-C to stop)")
            else:
                lines, before = change_lines(before, shown, datetime.now(timezone.utc))
                for line in lines:
                    click.echo(line)
    except KeyboardInterrupt:
        stop.set()
    sys.exit(1 if failing else 0)


@main.command()
@click.argument("experiment", metavar="EXPERIMENT")
@click.option("--run", "run", metavar="SUFFIX", help="A sweep's run (default: every run).")
@click.option("--role", metavar="ROLE", help="Only this role's pods (worker, ps, chief, "
              "master, evaluator).")
@click.option("--index", type=click.IntRange(min=0), help="Only the pod of this index.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until Ctrl-C.")
@cluster_options
@handle_errors
def logs(experiment: str, run: str | None, role: str | None, index: int | None,
         follow: bool, where: Where) -> None:
    """Print the training logs of an experiment's pods.

    Each line is prefixed with its pod as `tfgen run-local` and `tfgen explain` name it
    (<run>-<role>-<index>), whatever the runtime calls the pod.
    """
    from ..errors import TfgenError
    from ..live import select
    from ..live.logs import choose, lines

    wanted = select([experiment]).wanted[0]
    cluster = where.connect(wanted.context)
    chosen = choose(cluster, wanted, run, role, index)
    if not chosen:
        raise TfgenError(f"no pod of {wanted.name} matches in {wanted.namespace} (yet): see "
                         f"`tfgen status {wanted.name}`")
    try:
        for prefix, line in lines(cluster, chosen, follow):
            click.echo(f"{prefix} {line}")
    except KeyboardInterrupt:
        pass


@main.command()
@click.argument("experiment", metavar="EXPERIMENT")
@click.option("--port", type=click.IntRange(0, 65535), default=6006, show_default=True,
              help="The local port (0: any free one).")
@click.option("--address", default="127.0.0.1", show_default=True,
              help="The local address to listen on.")
@cluster_options
@handle_errors
def tensorboard(experiment: str, port: int, address: str, where: Where) -> None:
    """Open the experiment's TensorBoard on a local port, until Ctrl-C.

    Forwards the port through the API server to the TensorBoard pod, as `kubectl
    port-forward` does, and prints the URL. A sweep has one TensorBoard comparing its runs.
    """
    from ..live import select
    from ..live.forward import listen

    wanted = select([experiment]).wanted[0]
    forward = listen(where.connect(wanted.context), wanted.name, wanted.namespace, address, port)
    click.echo(f"TensorBoard of {wanted.name}: {forward.url}  (Ctrl-C to stop)")
    stop = threading.Event()
    try:
        forward.serve(stop)
    except KeyboardInterrupt:
        stop.set()
    finally:
        forward.close()
    click.echo("stopped", err=True)
