"""`tfgen validate`, `tfgen render` and `tfgen import`: from spec files to the generated files."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..problems import FORMATS, errors_of, format_problems
from ..validate import validate_repo
from ..words import counted
from .app import NO_CACHE_OPTION, ROOT_OPTION, emit_problems, handle_errors, main

if TYPE_CHECKING:
    from ..problems import Problem
    from ..render import ApplyResult
    from ..render.plan import RenderPlan

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

    Exit codes: 0 all valid (warnings, e.g. an image tagged :latest, are printed and counted
    but fail nothing), 1 problems found, 2 usage error.
    """
    result = validate_repo(paths)
    if fmt == "json" or result.problems:
        click.echo(format_problems(result.problems, fmt))
    click.echo(result.summary(), err=True)
    if not result.ok:
        sys.exit(1)


# --- tfgen render -----------------------------------------------------------------------------


def _render_summary(plan: RenderPlan, *, check: bool, written: Sequence[str] = (),
                    removed: Sequence[str] = ()) -> str:
    """The closing line of `tfgen render`, in plain words, with the next step."""
    counts = plan.counts()
    ready = f"{counted(plan.experiments, 'experiment')} ready for Argo CD"
    left = counts["orphan"] - len(removed)
    extras = _left_alone(counts, left, check=check)
    if check:
        if plan.drift:
            to_write = counts["create"] + counts["update"]
            what = f"{counted(to_write, 'file')} to write{extras}" if to_write else extras[2:]
            return (f"generated files are out of date: {what}. Next: run `tfgen render"
                    f"{' --prune' if left else ''}`, then commit what it writes")
        return (f"generated files are up to date: {ready} "
                f"({counted(counts['unchanged'], 'file')}{extras})")
    done = []
    if written:
        done.append(f"{counted(len(written), 'file')} written")
    if removed:
        done.append(f"{counted(len(removed), 'left-over file')} deleted")
    if not done:
        return (f"{ready}: nothing to write, {counted(counts['unchanged'], 'file')} unchanged"
                f"{extras}. Next: `tfgen check`, then open a pull request")
    folders = sorted({path.split("/")[0] + "/" for path in (*written, *removed)})
    return (f"{ready}: {', '.join(done)}, {counts['unchanged']} unchanged{extras}. Next: "
            f"commit {' and '.join(folders)}, then open a pull request")


def _left_alone(counts: dict[str, int], left: int, *, check: bool) -> str:
    """The summary's notes on the files the render leaves in place: `left` files no spec
    generates (`--prune` deletes them) and files tfgen did not write; "" when there are none."""
    extras = ""
    if left:
        them = "it" if left == 1 else "them"
        extras += (f", {counted(left, 'left-over file')} (no spec generates {them}"
                   + (")" if check else f"; --prune deletes {them})"))
    if counts["foreign"]:
        extras += f", {counted(counts['foreign'], 'file')} not written by tfgen (left alone)"
    return extras


@main.command()
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 with a unified diff if argo/ or .github/CODEOWNERS "
                   "differs from what would be generated (changed, missing, or left over: no "
                   "spec generates it).")
@click.option("--prune", is_flag=True,
              help="Delete generated files no spec generates any more (only files that carry "
                   "tfgen's header).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text",
              show_default=True, help="Output for people (text) or programs (json, github).")
@NO_CACHE_OPTION
@ROOT_OPTION
@handle_errors
def render(check: bool, prune: bool, fmt: str, no_cache: bool, root: Path | None) -> None:
    """Generate argo/ from experiments/*.yaml and tfgen.yaml.

    Per experiment: argo/experiments/<name>/values.yaml (chart values) and app.yaml (the
    ApplicationSet's input); once: argo/project.yaml, applicationset.yaml, bootstrap.yaml and
    argocd-cm-health.yaml, and .github/CODEOWNERS when tfgen.yaml declares owners.
    Specs are validated first; nothing is written when any is invalid. Files are written
    atomically and only when their content changes. Specs and files that an earlier render or
    check found in order are known again by their content hashes (.tfgen-cache/).

    Exit codes: 0 up to date / written, 1 problems or drift (--check), 2 usage.
    """
    from ..render import plan_repository, remembering

    with remembering(root, enabled=not no_cache) as memory:
        _render(check, prune, fmt, plan_repository(root, memory))


def _render(check: bool, prune: bool, fmt: str,
            planned: tuple[RenderPlan | None, list[Problem]]) -> None:
    from ..render import apply_plan

    plan, problems = planned
    if problems and plan is None:
        emit_problems(problems, fmt)
        sys.exit(1)
    assert plan is not None
    problems = problems + plan.problems
    if check:
        _report_check(plan, problems, fmt)
        sys.exit(1 if plan.drift or errors_of(problems) else 0)
    result = apply_plan(plan, prune=prune)
    _report_written(plan, result, problems, fmt)
    sys.exit(1 if errors_of(problems) else 0)  # the specs' warnings fail nothing


def _report_check(plan: RenderPlan, problems: list[Problem], fmt: str) -> None:
    """What `tfgen render --check` prints: the drift as a diff, the problems, the closing
    line; or all of it as one JSON object."""
    drift = plan.drift
    if fmt == "json":
        click.echo(json.dumps({
            "check": True, "upToDate": not drift, "counts": plan.counts(),
            "drift": [{"path": c.path, "action": c.action} for c in drift],
            "diff": plan.diff(),
            "problems": [asdict(p) for p in sorted(problems)],
        }, indent=2))
        return
    if drift:
        click.echo(plan.diff(), nl=False)
    emit_problems(problems, fmt)
    click.echo(_render_summary(plan, check=True), err=True)


def _report_written(plan: RenderPlan, result: ApplyResult, problems: list[Problem],
                    fmt: str) -> None:
    """What `tfgen render` prints once it has written: each file written, removed or left
    over, the problems, the closing line; or all of it as one JSON object."""
    if fmt == "json":
        click.echo(json.dumps({
            "check": False, "counts": plan.counts(),
            "written": result.written, "removed": result.removed,
            "orphans": result.kept_orphans,
            "problems": [asdict(p) for p in sorted(problems)],
        }, indent=2))
        return
    for change in plan.changes:
        if change.action in ("create", "update"):
            click.echo(f"{change.action}d {change.path}")
    for path in result.removed:
        click.echo(f"removed {path}")
    for path in result.kept_orphans:
        click.echo(f"left over {path} (no spec generates it; --prune removes it)")
    emit_problems(problems, fmt)
    click.echo(_render_summary(plan, check=False, written=result.written,
                               removed=result.removed), err=True)


# --- tfgen import -----------------------------------------------------------------------------


@main.command("import")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--name", metavar="NAME",
              help="Experiment name (default: the TFJob's name); only with one TFJob.")
@click.option("--owner", metavar="EMAIL",
              help="Who answers for the experiment (the spec's metadata.owner; default: "
              "git config user.email).")
@click.option("--log-dir", metavar="PATH",
              help="The spec's log directory (tensorboard.logDir) instead of the input's; "
              "every arg and env value that used the input's is pointed here (e.g. to import "
              "a run beside the experiment it came from); only with one training job.")
@click.option("--write", is_flag=True,
              help="Write experiments/<name>.yaml (never over an existing file) instead of "
              "printing the spec.")
@handle_errors
def import_command(files: tuple[Path, ...], name: str | None, owner: str | None,
                   log_dir: str | None, write: bool) -> None:
    """Turn TFJob or JobSet, PV/PVC and TensorBoard manifests into experiment specs.

    FILES are YAML manifests: multi-document files, `kubectl get -o yaml` Lists, or folders of
    them. Each TFJob (kubeflow.org/v1alpha1, v1alpha2, v1beta1 or v1), or JobSet of the shape
    tfgen renders for runtime jobset, becomes one spec: its replica groups as roles, the claim
    its pods mount as storage (the NAS PV behind it when the input holds the claim, else an
    existing claim), and a Deployment running TensorBoard on the same claim as the
    TensorBoard. Every input field the spec cannot express is listed on
    stderr with the reason. The spec is validated first; without --write it is printed on
    stdout. Writing needs every spec valid and new: all are written or none; a spec that
    would not be valid is shown on stdout as it would be, before its problems.

    Exit codes: 0 imported, 1 input that cannot be imported or an invalid spec (nothing
    written), 2 usage error.
    """
    from ..importer import ImportRefused, import_manifests
    from ..importer.leftout import QUIET

    try:
        result = import_manifests(files, name=name, owner=owner, write=write, log_dir=log_dir)
    except ImportRefused as refused:  # the spec as it would be, then its problems
        click.echo("---\n".join(refused.specs.values()), nl=False)
        raise
    if not write:
        click.echo("---\n".join(result.specs.values()), nl=False)
    for reason, lines in result.left_out.by_reason.items():
        click.echo(f"not imported, {reason}:", err=True)
        for line in lines:
            click.echo(f"  {line}", err=True)
    for reason, objects in result.left_out.counted.items():
        click.echo(f"not imported, {reason} ({QUIET[reason]}), not listed: "
                   f"{counted(len(objects), 'object')}", err=True)
    for line in result.notes:
        click.echo(f"note: {line}", err=True)
    for path in result.written:
        click.echo(path)
    what = " ".join(result.written) or "experiments/<name>.yaml"
    click.echo(
        f"{counted(len(result.specs), 'spec')} imported{', written' if write else ''}. Next: "
        + ("" if write else f"save the spec as {what} (or run again with --write), ")
        + f"`tfgen validate {what}`, `tfgen render`, then open a pull request with the spec "
        "and argo/.", err=True)
