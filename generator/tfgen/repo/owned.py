"""The copies a team repository holds of what tfgen ships: the chart and the schemas.

`tfgen init` copies them into a new repository; each is tfgen's, not the team's to edit. The
chart is in force where it is: Argo CD renders the repository's own copy. The schemas are in
force in tfgen: it validates with the copy it ships, and the repository's serves the editors.
After the pin moves to another tfgen, both copies are stale until `tfgen upgrade` rewrites
them; `tfgen check` says so. The copies' READMEs are the team's (`TEAM_READMES`): tfgen's own
describe its source tree. In tfgen's own source tree the folders are the shipped files.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..problems import WARNING, Problem
from ..words import counted
from . import layout, resources

# Each folder of copies, with what is in force and why: said by `tfgen check` and `upgrade`.
IN_FORCE = {
    layout.CHART_PATH: "Argo CD renders this repository's copy",
    layout.SCHEMAS_DIR: "tfgen validates with its own copy; editors read this repository's",
}


# What each folder's README says in a team repository: tfgen's own describe its source tree
# (make targets, tests/, generator/), which a team repository does not have.
TEAM_READMES = {
    f"{layout.CHART_PATH}/README.md": (
        "# charts/tfjob-experiment/\n\n"
        "The Helm chart Argo CD renders for each experiment of this repository: one release per\n"
        "experiment, its values in `argo/experiments/<name>/values.yaml` (written by `tfgen "
        "render`).\n\n"
        "It is the chart of the tfgen this repository pins, copied here by `tfgen init`: do not\n"
        "edit it. After the pin moves, `tfgen upgrade` brings it to the installed tfgen's "
        "(`tfgen\ncheck` warns while it differs). Its values and rules are described in tfgen's "
        "own\ndocumentation of the chart.\n"),
    f"{layout.SCHEMAS_DIR}/README.md": (
        "# schemas/\n\n"
        "JSON Schemas of the tfgen this repository pins, copied here by `tfgen init` for editors:\n"
        "every spec's first line (`# yaml-language-server: $schema=../schemas/experiment.schema"
        ".json`)\nand `tfgen.yaml`'s point here, so fields complete and are checked as you "
        "type.\n\n"
        "tfgen itself validates with the schemas it ships; do not edit these copies. After the "
        "pin\nmoves, `tfgen upgrade` brings them to the installed tfgen's (`tfgen check` warns "
        "while\nthey differ).\n"),
}
# tfgen's own sources of its docs, which a team repository has no use for.
NOT_COPIED = frozenset({f"{layout.CHART_PATH}/README.md.gotmpl"})
DOCS = frozenset({*TEAM_READMES, *NOT_COPIED})


def owned_files() -> dict[str, str]:
    """Every file tfgen ships into a team repository's chart and schemas folders, by
    repository-relative path (the schemas' upstream sources stay in tfgen's tree), with the
    team's READMEs."""
    files = _tree(resources.chart_dir(), layout.CHART_PATH)
    files.update(_tree(resources.schema_dir(), layout.SCHEMAS_DIR,
                       skip=layout.UPSTREAM_SCHEMAS_DIR))
    return {**{rel: text for rel, text in files.items() if rel not in NOT_COPIED},
            **TEAM_READMES}


def _tree(source: Path, dest: str, skip: str = "") -> dict[str, str]:
    """The text files under `source`, under `dest`; not those under the folder `skip` (a path
    like `dest`'s files)."""
    found: dict[str, str] = {}
    for path in sorted(source.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            rel = path.relative_to(source).as_posix()
            if skip and f"{dest}/{rel}".startswith(f"{skip}/"):
                continue
            found[f"{dest}/{rel}"] = path.read_text(encoding="utf-8")
    return found


@dataclass(frozen=True)
class CopyChange:
    """One file of the copies that differs from the installed tfgen's: its text in the
    repository (None: missing) and tfgen's (None: tfgen ships no such file)."""

    path: str
    here: str | None
    shipped: str | None

    @property
    def folder(self) -> str:
        return next(folder for folder in IN_FORCE if self.path.startswith(folder + "/"))

    def diff(self) -> str:
        """From the repository's copy to tfgen's, git-style."""
        return "".join(difflib.unified_diff(
            (self.here or "").splitlines(keepends=True),
            (self.shipped or "").splitlines(keepends=True),
            f"a/{self.path}" if self.here is not None else "/dev/null",
            f"b/{self.path}" if self.shipped is not None else "/dev/null"))


def stale_copies(root: Path, *, docs: bool = True) -> list[CopyChange]:
    """The repository's copies that differ from the installed tfgen's, in path order: none
    where the repository holds no such folder (tfgen reads its own then); without `docs`,
    not the READMEs (nothing reads them but people)."""
    shipped = owned_files()
    changes: list[CopyChange] = []
    sources = {layout.CHART_PATH: resources.chart_dir(),
               layout.SCHEMAS_DIR: resources.schema_dir()}
    for folder in IN_FORCE:
        base = root / folder
        if not base.is_dir() or base.resolve() == sources[folder].resolve():
            continue  # none here, or tfgen's own source tree: the shipped files themselves
        here = {rel: text for rel, text in _texts(base, folder).items()
                if not rel.startswith(layout.UPSTREAM_SCHEMAS_DIR + "/")}
        for rel in sorted({*here, *(r for r in shipped if r.startswith(folder + "/"))}):
            if here.get(rel) != shipped.get(rel) and (docs or rel not in DOCS):
                changes.append(CopyChange(rel, here.get(rel), shipped.get(rel)))
    return changes


def _texts(base: Path, folder: str) -> dict[str, str | None]:
    """Every file under `base` by repository-relative path, its text (None: not UTF-8 text,
    which no shipped file is)."""
    found: dict[str, str | None] = {}
    for path in sorted(base.rglob("*")):
        if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
            rel = f"{folder}/{path.relative_to(base).as_posix()}"
            try:
                found[rel] = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                found[rel] = None
    return found


def copies_problems(root: Path) -> list[Problem]:
    """A warning per folder whose copies differ from the installed tfgen's (`tfgen check`):
    which copy is in force, and how to bring them level."""
    out = []
    changes = stale_copies(root, docs=False)
    for folder, why in IN_FORCE.items():
        differ = [c.path.removeprefix(folder + "/") for c in changes
                  if c.folder == folder and c.shipped is not None]
        if differ:
            shown = ", ".join(differ[:3]) + (", ..." if len(differ) > 3 else "")
            out.append(Problem(
                f"{folder}/", message=f"{counted(len(differ), 'file')} here "
                f"{'differs' if len(differ) == 1 else 'differ'} from the installed tfgen "
                f"{__version__}'s ({shown}): {why}",
                hint="`tfgen upgrade` shows the differences and brings them level; commit the "
                     "result", severity=WARNING))
    return out
