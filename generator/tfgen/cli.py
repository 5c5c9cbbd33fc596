"""The `tfgen` command line: a thin layer over the library.

Each command parses its options, calls one library function and prints its result. This is the
only module that imports click, prints or exits. The rules every command keeps are stated once,
in OUTPUT_RULES (shown by `tfgen --help`).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import click

from . import __version__
from .errors import ProblemsFound, TfgenError
from .gate import DIFF_FORMATS, VALIDATORS
from .problems import FORMATS, Problem, format_problems
from .run import EXPLAIN_FORMATS
from .validate import validate_repo

F = TypeVar("F", bound=Callable[..., Any])

# What every command does with its output and exit code; `tfgen --help` shows it.
OUTPUT_RULES = """\b
Output: results on stdout (problems in the chosen --format, diffs, explanations, the files
written); summaries, notes and errors on stderr. So `tfgen ... --format json > out.json`
always gets clean JSON.
\b
Exit codes, every command: 0 ok, 1 problems found in the input (or drift, or a
failed run), 2 usage error (bad option or argument) or environment (helm, git,
a file the system refuses); 130 when interrupted (Ctrl-C)."""


# --root of render, check and diff: an existing folder (a typo must not fall back to the
# working directory's repository).
ROOT_OPTION = click.option(
    "--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
    help="Repository root (default: the nearest directory with tfgen.yaml).")


def _require_repository(root: Path | None) -> Path:
    """The folder check and diff start from, when a tfgen repository is there or above: the
    gate of a folder without tfgen.yaml would report every file of a tfgen repository as
    missing (exit 1) instead of saying where to run it (exit 2, as `tfgen render` does)."""
    from .render.plan import NotARepository
    from .repo import layout

    start = root or Path.cwd()
    if layout.find_root(cwd=start) is None:
        raise NotARepository(start.resolve())
    return start


def handle_errors(func: F) -> F:
    """Turn a TfgenError into its output and exit code: the problems it carries on stdout, one
    red line on stderr. An OSError is the machine refusing something (exit 2, one line naming
    the file, as tfgen/errors.py explains); other exceptions are bugs and keep tracebacks."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ProblemsFound as exc:
            fmt = kwargs.get("fmt")
            click.echo(format_problems(exc.problems, fmt if fmt in FORMATS else "text"))
            click.echo(exc.message, err=True)
            sys.exit(exc.exit_code)
        except TfgenError as exc:
            if exc.message:
                click.secho(f"error: {exc.message}", fg="red", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("tfgen: interrupted", err=True)
            sys.exit(130)  # 128 + SIGINT, as a shell reports it
        except BrokenPipeError:
            # The reader went away (`tfgen ... | head`): nothing left to say to it. Point stdout
            # at /dev/null so that the interpreter's final flush does not complain either.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            click.secho(f"error: {where}{exc.strerror or exc}", fg="red", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=OUTPUT_RULES)
@click.version_option(__version__, prog_name="tfgen")
def main() -> None:
    """Distributed TensorFlow on Kubernetes from Git.

    One reviewed file per experiment (experiments/<name>.yaml) becomes a Kubeflow TFJob, a NAS
    volume and a TensorBoard, synced to the cluster by Argo CD.
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

    PATHS are spec files or directories (their *.yaml files); the default is experiments/ at
    the repository root (the nearest directory holding tfgen.yaml). Every problem of every file
    is reported at once as path:line:col: $.pointer: message (hint).

    Exit codes: 0 all valid, 1 problems found, 2 usage error.
    """
    result = validate_repo(paths)
    if fmt == "json" or result.problems:
        click.echo(format_problems(result.problems, fmt))
    click.echo(result.summary(), err=True)
    if not result.ok:
        sys.exit(1)


# --- tfgen render -----------------------------------------------------------------------------


def _render_summary(counts: dict[str, int], *, prune: bool, check: bool) -> str:
    orphan_note = ""
    if counts["orphan"]:
        orphan_note = " (removed)" if prune and not check else " (kept: --prune removes them)"
    verb = "would be " if check else ""
    return (
        f"{counts['create']} {verb}created, {counts['update']} {verb}updated, "
        f"{counts['unchanged']} unchanged, {counts['orphan']} orphaned{orphan_note}, "
        f"{counts['foreign']} not generated by tfgen (left alone)"
    )


@main.command()
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 with a unified diff if argo/ or .github/CODEOWNERS "
                   "differs from what would be generated (changed, missing or orphaned "
                   "files).")
@click.option("--prune", is_flag=True,
              help="Delete generated files whose experiment spec is gone (only files that "
                   "carry tfgen's header).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text",
              show_default=True, help="Output for people (text) or programs (json, github).")
@ROOT_OPTION
@handle_errors
def render(check: bool, prune: bool, fmt: str, root: Path | None) -> None:
    """Generate argo/ from experiments/*.yaml and tfgen.yaml.

    Per experiment: argo/experiments/<name>/values.yaml (chart values) and app.yaml (the
    ApplicationSet's input); once: argo/project.yaml, applicationset.yaml, bootstrap.yaml and
    argocd-cm-tfjob-health.yaml, and .github/CODEOWNERS when tfgen.yaml declares owners.
    Specs are validated first; nothing is written when any is invalid. Files are written
    atomically and only when their content changes.

    Exit codes: 0 up to date / written, 1 problems or drift (--check), 2 usage.
    """
    from .render import apply_plan, plan_repository

    plan, problems = plan_repository(root)
    if problems and plan is None:
        _emit_problems(problems, fmt)
        sys.exit(1)
    assert plan is not None
    problems = problems + plan.problems
    counts = plan.counts()
    if check:
        drift = plan.drift
        if fmt == "json":
            click.echo(json.dumps({
                "check": True, "upToDate": not drift, "counts": counts,
                "drift": [{"path": c.path, "action": c.action} for c in drift],
                "diff": plan.diff(),
                "problems": [asdict(p) for p in sorted(problems)],
            }, indent=2))
        else:
            if drift:
                click.echo(plan.diff(), nl=False)
            _emit_problems(problems, fmt)
            state = "out of date" if drift else "up to date"
            click.echo(f"generated files are {state}: "
                       + _render_summary(counts, prune=prune, check=True)
                       + (" (run `tfgen render`)" if drift else ""), err=True)
        sys.exit(1 if drift or problems else 0)
    result = apply_plan(plan, prune=prune)
    if fmt == "json":
        click.echo(json.dumps({
            "check": False, "counts": counts,
            "written": result.written, "removed": result.removed,
            "orphans": result.kept_orphans,
            "problems": [asdict(p) for p in sorted(problems)],
        }, indent=2))
    else:
        for change in plan.changes:
            if change.action in ("create", "update"):
                click.echo(f"{change.action}d {change.path}")
        for path in result.removed:
            click.echo(f"removed {path}")
        for path in result.kept_orphans:
            click.echo(f"orphan {path} (its spec is gone; --prune removes it)")
        _emit_problems(problems, fmt)
        click.echo(_render_summary(counts, prune=prune, check=False), err=True)
    sys.exit(1 if problems else 0)


def _emit_problems(problems: list[Problem], fmt: str) -> None:
    if problems:
        click.echo(format_problems(problems, fmt))


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
@handle_errors
def explain(spec: str, fmt: str) -> None:
    """Show the pods of an experiment and the TF_CONFIG each one gets.

    Validates SPEC, renders the chart with the real helm and reads the TFJob the way the
    training operator (v1.9) does: pod and Service names, addresses, GPUs, and the exact
    TF_CONFIG it injects.
    """
    from .run.explain import explain_spec, format_explanation

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
    from .run.runlocal import run_local as run

    result = run(
        spec,
        emit=click.echo,
        status=functools.partial(click.echo, err=True),
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
@click.option("--validator", type=click.Choice(VALIDATORS),
              default="auto", show_default=True,
              help="Validator of rendered objects: auto = builtin, plus kubeconform when it is "
                   "on PATH; kubeconform/both require it.")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              default="text", show_default=True, help="How problems are printed.")
@click.option("--no-cache", is_flag=True, help="Ignore and do not write .tfgen-cache/.")
@ROOT_OPTION
@handle_errors
def check_command(base: str | None, changed_only: bool, validator: str, fmt: str,
                  no_cache: bool, root: Path | None) -> None:
    """Run the whole pull-request gate offline.

    Validates every spec, checks the committed generated files, renders every Application
    with helm exactly as Argo CD would, validates every rendered object strictly against the
    Kubernetes schemas of tfgen.yaml's kubernetesVersion and schemas/, and applies the TFJob,
    data-safety and GitOps rules. Exit 0 clean, 1 problems, 2 usage or missing tool.
    """
    from .gate.base import check_ref
    from .gate.check import CheckOptions, run_check

    if base is not None:
        check_ref(base)
    start = _require_repository(root)
    options = CheckOptions(base=base, changed_only=changed_only, validator=validator,
                           use_cache=not no_cache)
    progress = _Progress(sys.stderr.isatty())
    try:
        result = run_check(start, options, progress=progress)
    finally:
        progress.close()
    if fmt == "json" or result.problems:
        click.echo(format_problems(result.problems, fmt))
    click.echo(result.summary(), err=True)
    sys.exit(1 if result.problems else 0)


@main.command("diff")
@click.option("--base", metavar="REF", required=True,
              help="Git revision to compare with (e.g. origin/main).")
@click.option("--format", "fmt", type=click.Choice(DIFF_FORMATS), default="text",
              show_default=True, help="text for a terminal, markdown for a pull-request comment.")
@click.option("--no-cache", is_flag=True, help="Ignore and do not write .tfgen-cache/.")
@ROOT_OPTION
@handle_errors
def diff_command(base: str, fmt: str, no_cache: bool, root: Path | None) -> None:
    """Show the rendered objects that change since REF, one unified diff per object.

    Experiments touched since REF are rendered at REF and now with helm; each added, removed
    or changed object is shown. Exit 0 (also when objects differ); 1 with the problems when a
    spec is invalid (then no diff at all) or a side fails to render; 2 usage or missing tool.
    """
    from .gate.diff import format_diff, run_diff

    result = run_diff(_require_repository(root), base, use_cache=not no_cache)
    if result.diffs or not result.problems:  # never "no changes" when nothing could be compared
        click.echo(format_diff(result, fmt))
    if result.problems:
        click.echo(format_problems(result.problems, "text"))
        count = len(result.problems)
        click.echo(f"{count} problem{'s' if count != 1 else ''}: the diff against {base} is "
                   "incomplete", err=True)
        sys.exit(1)


# --- tfgen import -----------------------------------------------------------------------------


@main.command("import")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--name", metavar="NAME",
              help="Experiment name (default: the TFJob's name); only with one TFJob.")
@click.option("--owner", metavar="EMAIL",
              help="Who answers for the experiment (the spec's metadata.owner; default: "
              "git config user.email).")
@click.option("--write", is_flag=True,
              help="Write experiments/<name>.yaml (never over an existing file) instead of "
              "printing the spec.")
@handle_errors
def import_command(files: tuple[Path, ...], name: str | None, owner: str | None,
                   write: bool) -> None:
    """Turn existing TFJob, PV/PVC and TensorBoard manifests into experiment specs.

    FILES are YAML manifests: multi-document files, `kubectl get -o yaml` Lists, or folders of
    them. Each TFJob (kubeflow.org/v1alpha1, v1alpha2, v1beta1 or v1) becomes one spec: its
    replica groups as roles, the claim its pods mount as storage (the NAS PV behind it when the
    input holds the claim, else an existing claim), and a Deployment running TensorBoard on the
    same claim as the TensorBoard. Every input field the spec cannot express is listed on
    stderr with the reason. The spec is validated first; without --write it is printed on
    stdout. Writing needs every spec valid and new: all are written or none.

    Exit codes: 0 imported, 1 input that cannot be imported or an invalid spec (nothing
    written), 2 usage error.
    """
    from .importer import import_manifests

    result = import_manifests(files, name=name, owner=owner, write=write)
    if not write:
        click.echo("---\n".join(result.specs.values()), nl=False)
    for line in result.left_out:
        click.echo(f"not imported: {line}", err=True)
    for line in result.notes:
        click.echo(f"note: {line}", err=True)
    for path in result.written:
        click.echo(path)
    what = " ".join(result.written) or "experiments/<name>.yaml"
    click.echo(
        f"{len(result.specs)} spec{'s' if len(result.specs) != 1 else ''} imported"
        f"{', written' if write else ''}. Next: "
        + ("" if write else f"save the spec as {what} (or run again with --write), ")
        + f"`tfgen validate {what}`, `tfgen render`, then open a pull request with the spec "
        "and argo/.", err=True)
