"""`tfgen init`: start a new GitOps repository for a team."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..repo.runtimes import QUEUED_DEFAULT, RUNTIMES
from .app import ROOT_OPTION, handle_errors, main, require_repository

# The runtimes --runtime offers, the default first.
RUNTIME_NAMES = [runtime.name for runtime in RUNTIMES]

if TYPE_CHECKING:
    from ..scaffold import InitSettings


def _interactive() -> bool:
    """Prompts only for a person at a terminal; scripts and CI get the flags and defaults."""
    return sys.stdin.isatty()


def _ask(settings: InitSettings) -> InitSettings:
    """Ask for what the flags left open, offering the defaults (only on a terminal)."""
    from ..scaffold import defaults

    base = defaults()
    if settings.repo_url is None:
        settings.repo_url = click.prompt("Git URL of the new repository, as Argo CD clones it",
                                         default=base.repo_url, err=True)
    if not settings.namespaces:
        answer = click.prompt("Namespaces experiments run in (comma-separated)",
                              default=",".join(base.namespaces), err=True)
        settings.namespaces = [part.strip() for part in answer.split(",") if part.strip()]
    if settings.nas_server is None:
        answer = click.prompt("NAS server every experiment mounts (empty: each spec names one)",
                              default="", show_default=False, err=True)
        settings.nas_server = answer.strip() or None
    _ask_runtime(settings, base)
    _ask_cluster(settings, base)
    if not settings.node_types:
        from ..scaffold import NODE_TYPE_FORM

        answer = click.prompt(
            f"Node types pods may land on, each {NODE_TYPE_FORM}, separated by spaces (a role "
            "that none can hold is refused; empty: not checked)",
            default="", show_default=False, err=True)
        settings.node_types = answer.split()
    if settings.tfgen_source is None:
        settings.tfgen_source = click.prompt(
            "Where CI installs tfgen from: the tfgen Git repository at a commit or tag "
            "(git+https://...@v1.2), or your package index (https://.../simple/)",
            default=base.tfgen_source, err=True)
    return settings


def _ask_cluster(settings: InitSettings, base: InitSettings) -> None:
    """The first cluster: its name, its Argo CD destination, its Kubernetes version."""
    from ..scaffold.settings import DEFAULT_CLUSTER, DEFAULT_DESTINATION

    if settings.cluster is None:
        settings.cluster = click.prompt("Name of the cluster experiments run on (messages and "
                                        "spec.cluster use it)", default=DEFAULT_CLUSTER, err=True)
    if settings.destination is None:
        settings.destination = click.prompt(
            "Its Argo CD destination: the API server URL, or the cluster's name in Argo CD",
            default=DEFAULT_DESTINATION, err=True)
    if settings.kubernetes_version is None:
        settings.kubernetes_version = click.prompt("Its Kubernetes version (x.y)",
                                                   default=base.kubernetes_version, err=True)


def _ask_runtime(settings: InitSettings, base: InitSettings) -> None:
    """A Kueue queue and priority (none unless answered), and the namespaces' runtime: the
    one Kueue admits by default when they are queued."""
    if settings.queue is None:
        answer = click.prompt("Kueue LocalQueue that admits the experiments (empty: none, not "
                              "queued)", default="", show_default=False, err=True)
        settings.queue = answer.strip()
    if settings.priority is None and settings.queue:
        answer = click.prompt("Kueue WorkloadPriorityClass of their runs (empty: none)",
                              default="", show_default=False, err=True)
        settings.priority = answer.strip()
    if settings.runtime is None:
        settings.runtime = click.prompt(
            "Runtime of the namespaces' experiments, unless a spec names its own",
            type=click.Choice(RUNTIME_NAMES), err=True,
            default=QUEUED_DEFAULT.name if settings.queue else base.runtime)


# The settings a repeated flag fills, with the flag.
REPEATED = {"namespaces": "--namespace", "node_types": "--node-type",
            "cluster_runtimes": "--cluster-runtime"}


# What init asks a person for and cannot guess (the NAS server is optional), by setting, with
# the flag that gives it and what it is.
NEEDED = {
    "repo_url": ("--repo-url", "the Git URL Argo CD clones this repository from"),
    "namespaces": ("--namespace", "the namespaces experiments run in"),
    "tfgen_source": ("--tfgen-source", "where CI installs tfgen from: the tfgen Git "
                     "repository at a commit or tag, or your package index"),
}


def _refuse_unasked(settings: InitSettings) -> None:
    """Without a terminal nobody can be asked: each value init needs must be a flag (or
    --yes says to take the defaults), never a placeholder written silently."""
    from ..errors import OptionsError
    from ..scaffold import defaults

    missing = [name for name in NEEDED if not getattr(settings, name)]
    if missing:
        # --yes is offered only where every setting missing has a default to take
        base = defaults()
        without = [NEEDED[name][0] for name in missing if not getattr(base, name)]
        way = ("(or --yes to take the defaults)" if not without else
               f"({' and '.join(without)} ha{'s' if len(without) == 1 else 've'} no default "
               f"here, so --yes cannot stand in for {'it' if len(without) == 1 else 'them'})")
        raise OptionsError(f"tfgen init has no terminal to ask for these; give them as flags "
                           f"{way}:\n  " + "\n  ".join(f"{NEEDED[name][0]} ({NEEDED[name][1]})"
                                                      for name in missing))


@main.command()
@click.argument("directory", required=False, default=".",
                type=click.Path(file_okay=False, path_type=Path))
@click.option("--repo-url", help="Git URL of the new repository, as Argo CD clones it "
                                 "(https://..., ssh://... or git@host:path).")
@click.option("--namespace", "namespaces", multiple=True,
              help="A namespace experiments may run in (repeat for more); the first is the "
                   "specs' default.")
@click.option("--nas-server", help="The NAS server every experiment mounts unless its spec "
                                   "names another (default: none, each spec names one).")
@click.option("--cluster", metavar="NAME",
              help="The name of the first cluster experiments run on, in tfgen.yaml's clusters "
                   "(messages and spec.cluster use it; default: in-cluster).")
@click.option("--destination", metavar="URL|NAME",
              help="Its Argo CD destination: the API server URL (https://...), or the name "
                   "Argo CD knows the cluster by (default: https://kubernetes.default.svc).")
@click.option("--kubernetes-version", help="Its Kubernetes version (x.y).")
@click.option("--cluster-runtime", "cluster_runtimes", multiple=True,
              type=click.Choice(RUNTIME_NAMES),
              help="A runtime whose controller the cluster runs (repeat for more; default: "
                   "all); a spec of another is refused.")
@click.option("--context", metavar="CONTEXT",
              help="The kubeconfig context that reads the cluster (default: the current one).")
@click.option("--runtime", type=click.Choice(RUNTIME_NAMES),
              help="What the namespaces' experiments run on unless a spec says otherwise "
                   f"(tfgen.yaml policy.<namespace>.runtime; default: {RUNTIME_NAMES[0]}, "
                   f"{QUEUED_DEFAULT.name} with --queue: Kueue admits it by default).")
@click.option("--queue", metavar="LOCALQUEUE",
              help="The Kueue LocalQueue that admits the namespaces' experiments "
                   "(policy.<namespace>.queue, and the one of its queues; default: none, not "
                   "queued).")
@click.option("--priority", metavar="CLASS",
              help="The Kueue WorkloadPriorityClass of their runs (policy.<namespace>.priority, "
                   "and the one of its priorities; needs --queue; default: none).")
@click.option("--node-type", "node_types", multiple=True,
              metavar="NAME:gpus=N,cpu=C,memory=M,LABEL=VALUE",
              help="A node type of the cluster pods may land on (repeat for more): its GPUs, "
                   "and the CPU and memory one pod may get there, and the labels a nodeSelector "
                   "names it by (tfgen.yaml clusters[0].nodeTypes). A role that none can hold "
                   "is refused (default: none, not checked).")
@click.option("--argocd-namespace", help="The namespace Argo CD runs in.")
@click.option("--argocd-version", help="The Argo CD minor version (x.y).")
@click.option("--target-revision", help="The branch Argo CD follows.")
@click.option("--tfgen-source", metavar="SOURCE",
              help="Where the repository's CI installs tfgen from: the tfgen Git repository "
                   "at a commit or tag (git+https://host/org/tfgen.git@v0.1.0) or your package "
                   "index (https://host/simple/). Default: the Git commit this tfgen was "
                   "installed from, if it was.")
@click.option("--yes", "-y", is_flag=True,
              help="Ask nothing: settings not given as flags take their defaults.")
@handle_errors
def init(directory: Path, yes: bool, **flags: Any) -> None:
    """Start a new tfgen repository in DIRECTORY (default: here).

    Writes tfgen.yaml (from the flags; on a terminal, the ones missing are asked unless
    --yes; without one, --repo-url, --namespace and --tfgen-source are needed unless --yes;
    --runtime, --queue and --priority go to policy.<namespace> of every --namespace;
    --cluster, --destination, --kubernetes-version, --cluster-runtime, --context and
    --node-type describe the first of tfgen.yaml's clusters),
    README.md (set up and check), the chart (charts/), the schemas (schemas/), the
    pull-request workflow (.github/workflows/pr.yaml, installing tfgen from --tfgen-source),
    .pre-commit-config.yaml, .gitattributes, .gitignore, experiments/README.md and
    argo/README.md, then renders argo/. `tfgen check` passes on the result. Refuses a folder
    that already holds tfgen.yaml or any of these files (nothing is written then).

    Exit codes: 0 written, 2 usage error (a refused folder, a setting missing or invalid).
    """
    # imported here: the scaffold (Jinja2, the full JSON Schema validator) costs every other
    # command a tenth of a second at start-up
    from ..scaffold import InitSettings, SettingsError, init_repository

    # the flags other than --yes are InitSettings' fields, one for one (--namespace,
    # --node-type and --cluster-runtime, repeated, fill namespaces, node_types and
    # cluster_runtimes)
    settings = InitSettings(**{**flags, **{name: list(flags[name]) for name in REPEATED}})
    if not yes and _interactive():
        settings = _ask(settings)
    elif not yes:
        _refuse_unasked(settings)
    try:
        result = init_repository(directory, settings)
    except SettingsError as exc:
        # name the settings as the flags that set them: --repo-url, not repo_url
        message = exc.message
        for name in exc.settings:
            flag = REPEATED.get(name) or f"--{name.replace('_', '-')}"
            message = message.replace(f"\n{name}: ", f"\n{flag}: ")
        raise SettingsError(message, exc.settings) from None
    for path in result.written:
        click.echo(path)
    for warning in result.warnings:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    click.echo(f"{len(result.written)} files written in {result.root}; next: cd there, "
               "`tfgen install-helm`, `git init`, commit, then `tfgen check` and "
               "`tfgen new NAME` (README.md: set up and check on any machine)", err=True)


@main.command()
@click.option("--check", is_flag=True,
              help="Only show the differences; exit 1 when there are any, write nothing.")
@ROOT_OPTION
@handle_errors
def upgrade(check: bool, root: Path | None) -> None:
    """Bring the repository's chart and schemas to the installed tfgen's.

    `tfgen init` copied charts/tfjob-experiment/ and schemas/ from the tfgen that made the
    repository; after the pin moves, Argo CD still renders the old chart and editors check
    against the old schemas (tfgen validates with its own). Each file that differs is shown
    as a unified diff on stdout, then rewritten (each one complete or not at all). The files
    a team edits (tfgen.yaml, README.md, the workflow, hooks and specs) are never touched; a
    file in those folders that tfgen does not ship is named and left in place. `tfgen check`
    warns while the copies differ.

    Exit codes: 0 up to date or upgraded, 1 with --check when the copies differ, 2 usage.
    """
    from ..scaffold.upgrade import next_step, upgrade_repository

    result = upgrade_repository(require_repository(root), write=not check)
    for change in result.changes:
        click.echo(change.diff(), nl=False)
    click.echo(next_step(result, wrote=not check), err=True)
    if check and result.changes:
        sys.exit(1)
