"""The `tfgen` command group and what every command shares: the output and exit-code rules
(OUTPUT_RULES, shown by `tfgen --help`), error handling, --root and the progress bar."""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .. import __version__
from ..errors import ProblemsFound, TfgenError
from ..problems import FORMATS, Problem, format_problems
from ..validate import builtin_defaults_note, on_builtin_defaults

F = TypeVar("F", bound=Callable[..., Any])

# What every command does with its output and exit code; `tfgen --help` shows it.
OUTPUT_RULES = """\b
Output, every command: results on stdout (problems in the chosen --format, diffs, tables,
explanations, the files written, a run's own output); progress,
summaries, notes and errors on stderr, a summary closing every command: what happened, in
plain words, and the next step. So `tfgen ... --format json > out.json` gets clean JSON.
\b
Exit codes, every command: 0 ok, 1 problems found in the input (or drift, or a
failed run), 2 usage error (bad option or argument) or environment (helm, git,
a file the system refuses); 130 when interrupted (Ctrl-C). Warnings (`warning:`,
e.g. an image tagged :latest) are printed and counted apart, and never change
the exit code."""


# --root of render, check and diff: an existing folder (a typo must not fall back to the
# working directory's repository).
ROOT_OPTION = click.option(
    "--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
    help="Repository root (default: the nearest directory with tfgen.yaml).")

# --no-cache of render, check and diff: the same switch for every command that uses the cache
# (repo.cache), so they cannot come to describe it differently.
NO_CACHE_OPTION = click.option(
    "--no-cache", is_flag=True, help="Ignore and do not write .tfgen-cache/.")


def require_repository(root: Path | None) -> Path:
    """The folder check and diff start from, when a tfgen repository is there or above: the
    gate of a folder without tfgen.yaml would report every file of a tfgen repository as
    missing (exit 1) instead of saying where to run it (exit 2, as `tfgen render` does)."""
    from ..render.plan import NotARepository
    from ..repo import layout

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


GC_THRESHOLDS = (100_000, 50, 100)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=OUTPUT_RULES)
@click.version_option(__version__, prog_name="tfgen")
def main() -> None:
    """Distributed TensorFlow on Kubernetes from Git.

    One reviewed file per experiment (experiments/<name>.yaml) becomes a Kubeflow TFJob or a
    JobSet, optionally queued by Kueue, a NAS volume and a TensorBoard, synced to the cluster
    by Argo CD.
    """
    # A command builds large trees of data without cycles (thousands of specs, verdicts and
    # manifests); with Python's default of a collection per 700 new objects, the cyclic
    # collector took a third of a 10,000-experiment check walking them again and again.
    gc.set_threshold(*GC_THRESHOLDS)


def _note_builtin_defaults(start: Path) -> None:
    """Say once per command, on stderr, that no tfgen.yaml was found and the defaults apply."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:  # a library call outside the command line: not ours to print
        return
    meta = ctx.find_root().meta
    if not meta.get("tfgen.builtin-defaults-noted"):
        meta["tfgen.builtin-defaults-noted"] = True
        click.echo(builtin_defaults_note(start), err=True)


on_builtin_defaults(_note_builtin_defaults)


def emit_problems(problems: list[Problem], fmt: str) -> None:
    if problems:
        click.echo(format_problems(problems, fmt))




class Progress:
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
