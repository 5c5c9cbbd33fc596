"""`tfgen new`, `tfgen rerun`, `tfgen list` and `tfgen retire`: an experiment's life in Git."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..problems import errors_of, format_problems, tally
from ..repo.resources import role_bounds
from ..repo.runtimes import RUNTIMES
from ..words import counted
from .app import emit_problems, handle_errors, main

if TYPE_CHECKING:
    from ..lifecycle import Created, NewOptions, Roles

# The schema's bounds, so that an option never accepts what validation then refuses.
MAX_REPLICAS, MAX_GPUS = role_bounds()

_NEXT = ("next: edit {path} (image, command, args, data paths), `tfgen render`, then open a "
         "pull request with the spec and argo/")


def _created(created: Created, note: str = "") -> None:
    """The file written on stdout; each field a copy changed, then what next, on stderr."""
    click.echo(created.path)
    for change in created.changes:
        click.echo(f"  changed {change}", err=True)
    for warning in sorted(created.warnings):
        click.echo(warning.text(), err=True)
    for line in created.notes:
        click.secho(f"note: {line}", fg="yellow", err=True)
    click.echo(f"wrote {created.path}{note}; " + _NEXT.format(path=created.path), err=True)


LOG_DIR_OPTION = click.option(
    "--log-dir", metavar="PATH",
    help="The copy's log directory (default: the old one renamed where it names the old run, "
         "else the old one with the new name added); every arg and env value that used the "
         "old one is pointed here.")


@dataclass(frozen=True)
class NewFlags:
    """The options of `tfgen new`, as given on the command line (None: not given)."""

    source: str | None
    namespace: str | None
    owner: str | None
    image: str | None
    command: str | None
    workers: int | None
    ps: int | None
    gpus: int | None
    chief_gpus: int | None
    log_dir: str | None
    runtime: str | None
    queue: str | None
    priority: str | None
    cluster: str | None

    def roles(self) -> Roles | None:
        """The topology to write: the default one (None) unless a count is given, the counts
        not given then taking Roles' defaults."""
        from ..lifecycle import Roles

        counts = (self.workers, self.ps, self.gpus, self.chief_gpus)
        if all(count is None for count in counts):
            return None
        defaults = Roles()
        return Roles(self.workers if self.workers is not None else defaults.workers,
                     self.ps if self.ps is not None else defaults.ps,
                     self.gpus if self.gpus is not None else defaults.gpus,
                     self.chief_gpus)

    def options(self) -> NewOptions:
        """What `new_experiment` is asked for."""
        from ..lifecycle import NewOptions

        return NewOptions(source=self.source, owner=self.owner, namespace=self.namespace,
                          image=self.image, command=self.command, roles=self.roles(),
                          log_dir=self.log_dir, runtime=self.runtime, queue=self.queue,
                          priority=self.priority, cluster=self.cluster)


# spec.cluster of a new spec or copy: one of tfgen.yaml's clusters (validate judges it).
CLUSTER_OPTION = click.option(
    "--cluster", metavar="NAME",
    help="spec.cluster, the cluster of tfgen.yaml the run goes to (default: not written, the "
         "namespace's cluster).")


@main.command()
@click.argument("name")
@click.option("--from", "source", metavar="EXPERIMENT",
              help="Copy this experiment's spec (name or file), comments kept, renaming every "
              "field that names the old run.")
@click.option("--namespace", metavar="NS", help="Namespace (default: tfgen.yaml's).")
@click.option("--owner", metavar="EMAIL",
              help="metadata.owner (default: git config user.email).")
@click.option("--image", metavar="IMAGE",
              help="Training image (default: tfgen.yaml's spec.image, if it sets one).")
@click.option("--command", "command", metavar="CMD", help="Training command, e.g. "
              "'python /app/main.py' (without --from).")
@click.option("--workers", type=click.IntRange(0, MAX_REPLICAS), default=None,
              help="Worker replicas (without --from; default 2).")
@click.option("--ps", type=click.IntRange(0, MAX_REPLICAS), default=None,
              help="Parameter servers (without --from; default 1).")
@click.option("--gpus", type=click.IntRange(0, MAX_GPUS), default=None,
              help="GPUs per worker (without --from; default 0).")
@click.option("--chief-gpus", type=click.IntRange(0, MAX_GPUS), default=None,
              help="GPUs of the chief (without --from; default 0 with parameter servers, "
                   "where it only coordinates, else --gpus).")
@LOG_DIR_OPTION
@click.option("--runtime", type=click.Choice([runtime.name for runtime in RUNTIMES]),
              help="spec.runtime, what the experiment runs on (default: not written, the "
                   "namespace's policy.<namespace>.runtime in tfgen.yaml applies, else "
                   f"{RUNTIMES[0].name}).")
@click.option("--queue", metavar="LOCALQUEUE",
              help="spec.queue, the Kueue LocalQueue that admits it (default: not written, the "
                   "namespace's policy queue applies; \"\": not queued).")
@click.option("--priority", metavar="CLASS",
              help="spec.priority, its Kueue WorkloadPriorityClass (needs a queue; default: not "
                   "written, the namespace's policy priority applies).")
@CLUSTER_OPTION
@handle_errors
def new(name: str, **options: Any) -> None:
    """Start an experiment: write a new, validated experiments/NAME.yaml.

    Without --from: 1 chief, --workers workers, --ps parameter servers, on the NAS of
    tfgen.yaml's defaults mounted at /training, logs in /training/NAME/logs. With --from: a
    copy of that spec in which the name and every string under spec that names the old run
    (log and checkpoint directories, args, env values) are renamed; data paths without the
    name are kept. The copy gets a log directory of its own (--log-dir, else the old one
    renamed or with the new name added), and every arg and env value that used the old one
    follows it; each field changed is listed. The copy records its source in the annotation
    tfgen.io/copy-of (`tfgen diff` shows what it changes). --cluster, --runtime, --queue
    and --priority are written into the spec (new or copy) only when given: otherwise the
    namespace's defaults in tfgen.yaml apply.

    Exit codes: 0 written, 1 the spec would not be valid (nothing written), 2 usage (a bad
    name, an existing file, not in a tfgen repository).
    """
    from ..lifecycle import new_experiment

    given = NewFlags(**options)  # the options above, one for one
    created = new_experiment(name, given.options())
    _created(created)


@main.command()
@click.argument("experiment")
@click.option("--as", "new_name", metavar="NEW", required=True, help="The new run's name.")
@click.option("--owner", metavar="EMAIL",
              help="metadata.owner (default: git config user.email).")
@LOG_DIR_OPTION
@CLUSTER_OPTION
@handle_errors
def rerun(experiment: str, new_name: str, owner: str | None, log_dir: str | None,
          cluster: str | None) -> None:
    """Rerun EXPERIMENT under a new name: `tfgen new NEW --from EXPERIMENT`, plus the
    annotation tfgen.io/rerun-of: EXPERIMENT on the new spec (and every object it renders).
    With --cluster, the new run goes to that cluster (a started run cannot move).

    Exit codes: 0 written, 1 the spec would not be valid (nothing written), 2 usage.
    """
    from ..lifecycle import NewOptions, new_experiment

    created = new_experiment(new_name, NewOptions(source=experiment, owner=owner, rerun=True,
                                                  log_dir=log_dir, cluster=cluster))
    _created(created, f" (a rerun of {experiment})")


@main.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="An aligned table, or a JSON list of objects.")
@click.option("--namespace", metavar="NS", help="Only experiments in this namespace.")
@click.option("--owner", metavar="EMAIL", help="Only experiments of this owner.")
@click.option("--state", type=click.Choice(["active", "retired"]),
              help="Only active or only retired experiments.")
@handle_errors
def list_command(fmt: str, namespace: str | None, owner: str | None,
                 state: str | None) -> None:
    """List the experiments: where each runs, its topology, GPUs, storage and state.

    CLUSTER is where its runs go (tfgen.yaml's clusters; the column is left out of the table
    when every run goes to the one implicit cluster, in-cluster).

    HOLDS is what an experiment holds of its namespace's GPU quota (nothing when suspended or
    retired); for each namespace with a quota, a line on stderr says how much is held.
    Invalid specs are listed as far as they can be read, and their problems are reported as
    `tfgen validate` reports them (on stdout after the table; in JSON, on stderr).

    Exit codes: 0 listed (warnings too), 1 some spec has problems, 2 usage.
    """
    from ..lifecycle import list_experiments, quota_lines, table

    rows, problems = list_experiments()
    rows = [r for r in rows if r.matches(namespace, owner, state)]
    if fmt == "json":
        click.echo(json.dumps([r.as_dict() for r in rows], indent=2))
        if problems:
            click.echo(format_problems(problems, "text"), err=True)
    else:
        if rows:
            click.echo(table(rows))
        emit_problems(problems, "text")
    for line in quota_lines(rows):
        click.echo(line, err=True)
    click.echo(counted(len(rows), "experiment")
               + (f"; {tally(problems)} (`tfgen validate`)" if problems else ""), err=True)
    sys.exit(1 if errors_of(problems) else 0)  # warnings alone list as all well


@main.command()
@click.argument("experiment", required=False)
@click.option("--delete", is_flag=True,
              help="Remove the spec and argo/experiments/NAME/ instead, and print the "
              "`argocd app delete` to run after the merge.")
@click.option("--finished", "listing", metavar="FILE",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Instead of EXPERIMENT: retire every active experiment whose runs this "
                   "listing shows finished (`kubectl get tfjobs -A -o yaml > FILE`, "
                   "`tfjobs,jobsets` where the cluster runs JobSets).")
@handle_errors
def retire(experiment: str | None, delete: bool, listing: Path | None) -> None:
    """Retire EXPERIMENT: set spec.lifecycle: retired in its spec (comments kept).

    Once merged, Argo CD prunes its runs' jobs (a TFJob or a JobSet each, by its runtime),
    the TensorBoard (unless tensorboard.keep) and the NetworkPolicies; the PV and PVC stay
    bound with the data, and the Application stays Synced and Healthy. A retired experiment
    cannot become active again (`tfgen check --base` refuses it): rerun it under a new name.
    With --delete: the spec and its generated folder are removed (argo/ is rendered again)
    and the order of what follows is printed. With --finished FILE: every active experiment
    whose runs (each job of a sweep, of the experiment's runtime) the cluster listing shows
    finished (a TFJob Succeeded or Failed, a JobSet Completed or Failed) is retired in one
    go, so that finished runs stop holding their namespace's GPU quota.

    Exit codes: 0 done (also when already retired), 2 usage.
    """
    from ..lifecycle import REMOVAL_DOC, delete_command, retire_experiment

    if listing is not None:
        if experiment or delete:
            raise click.UsageError("--finished FILE retires what the listing shows finished: "
                                   "give no EXPERIMENT and no --delete with it")
        _retire_finished(listing)
        return
    if not experiment:
        raise click.UsageError("name the EXPERIMENT to retire (or --finished FILE)")
    result = retire_experiment(experiment, delete=delete)
    if delete:
        for path in result.removed:
            click.echo(f"removed {path}")
        click.echo(
            ("argo/ rendered again. " if result.rendered else
             "run `tfgen render --prune` to update argo/. ")
            + f"Next: open a pull request; AFTER it is merged run\n  "
            f"{delete_command(result.name)}\nNot before: while the spec is in Git "
            "the ApplicationSet would recreate the Application. The PV and PVC (and the NAS "
            f"data) stay; see {REMOVAL_DOC}.", err=True)
        return
    if not result.changed:
        click.echo(f"note: {result.path} is retired already; nothing changed", err=True)
        return
    click.echo(result.path)
    click.echo(f"retired {result.name} in {result.path}; next: `tfgen render`, then open a "
               f"pull request (once merged, Argo CD prunes the {result.kind} and TensorBoard; "
               "the data stays)", err=True)


def _retire_finished(listing: Path) -> None:
    from ..lifecycle import retire_finished
    from ..words import counted

    result = retire_finished(listing)
    for retired in result.retired:
        click.echo(retired.path)
    still = f"; {counted(result.running, 'active experiment')} not finished, left as they are"
    if not result.retired:
        click.echo(f"nothing finished to retire{still}", err=True)
        return
    click.echo(f"retired {counted(len(result.retired), 'finished experiment')}{still}; next: "
               "`tfgen render`, then open a pull request (their GPUs leave the quota once "
               "merged; the data stays)", err=True)
