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


# --- check and diff: the pull-request gate ----------------------------------------------------


class _Progress:
    """A progress bar on stderr for long runs, only when stderr is a terminal (CI logs and
    pipes stay clean)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.shown = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total < 20:
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label=f"{stage} ", file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.shown)
        self.shown = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


@main.command("check")
@click.option("--base", metavar="REF", help="Git revision the change is based on "
              "(e.g. origin/main): refuse changes a live run cannot take.")
@click.option("--changed", "changed_only", is_flag=True,
              help="Only render experiments touched since --base (a chart, schema, argo/ or "
                   "tfgen.yaml change means all).")
@click.option("--validator", type=click.Choice(["auto", "builtin", "kubeconform", "both"]),
              default="auto", show_default=True,
              help="Validator of rendered objects: auto = builtin, plus kubeconform when it is "
                   "on PATH; kubeconform/both require it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]),
              default="text", show_default=True, help="How problems are printed.")
@click.option("--no-cache", is_flag=True, help="Ignore and do not write .tfgen-cache/.")
@click.option("-C", "--repo", "repo", type=click.Path(file_okay=False, path_type=Path),
              default=".", show_default=True, help="Repository root (holds tfgen.yaml).")
@handle_errors
def check_command(base: str | None, changed_only: bool, validator: str, fmt: str,
                  no_cache: bool, repo: Path) -> None:
    """Run the whole pull-request gate offline.

    Validates every spec, checks the committed generated files, renders every Application
    with helm exactly as Argo CD would, validates every rendered object strictly against the
    Kubernetes schemas of tfgen.yaml's kubernetesVersion and schemas/, and applies the TFJob,
    data-safety and GitOps rules. Exit 0 clean, 1 problems, 2 usage or missing tool.
    """
    from .check import CheckOptions, run_check
    from .report import format_problems

    if changed_only and not base:
        raise click.UsageError("--changed needs --base REF (changes are counted since REF)")
    progress = _Progress(sys.stderr.isatty())
    try:
        result = run_check(repo, CheckOptions(base=base, changed_only=changed_only,
                                              validator=validator, use_cache=not no_cache),
                           progress=progress)
    finally:
        progress.close()
    if fmt == "json" or result.problems:
        click.echo(format_problems(result.problems, fmt))
    click.echo(result.summary(), err=True)
    sys.exit(1 if result.problems else 0)


@main.command("diff")
@click.option("--base", metavar="REF", required=True,
              help="Git revision to compare with (e.g. origin/main).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), default="text",
              show_default=True, help="text for a terminal, markdown for a pull-request comment.")
@click.option("--no-cache", is_flag=True, help="Ignore and do not write .tfgen-cache/.")
@click.option("-C", "--repo", "repo", type=click.Path(file_okay=False, path_type=Path),
              default=".", show_default=True, help="Repository root (holds tfgen.yaml).")
@handle_errors
def diff_command(base: str, fmt: str, no_cache: bool, repo: Path) -> None:
    """Show the rendered objects that change since REF, one unified diff per object.

    Experiments touched since REF are rendered at REF and now with helm; each added, removed
    or changed object is shown. Exit 0 (also when objects differ), 1 if a side fails to
    render, 2 usage or missing tool.
    """
    from .diff import format_diff, run_diff
    from .report import format_problems

    result = run_diff(repo, base, use_cache=not no_cache)
    click.echo(format_diff(result, fmt))
    if result.problems:
        click.echo(format_problems(result.problems, "text"), err=True)
        sys.exit(1)
