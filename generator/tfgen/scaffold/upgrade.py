"""`tfgen upgrade`: a team repository's copies of the chart and the schemas, brought to the
installed tfgen.

`tfgen init` copied them from the tfgen that made the repository (`repo.owned`); once the
pin moves to another tfgen, the chart Argo CD renders and the schemas editors check against
are the old ones. Upgrade shows each difference as a unified diff and, unless asked only to
check, rewrites them (each file complete or not at all). Only tfgen's own copies are touched:
the files a team edits (tfgen.yaml, README.md, the workflow and hooks, the specs) are kept as
they are, and a file in the chart or schemas folder that tfgen does not ship (a team's own
template) is named and left in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..render.write import write_files
from ..repo import layout
from ..repo.owned import IN_FORCE, CopyChange, stale_copies
from ..words import counted


@dataclass
class UpgradeResult:
    """The copies that differ from the installed tfgen's (`changes`: tfgen's version of each
    to be written; `foreign`: files tfgen does not ship, left in place) and those written."""

    root: Path
    changes: list[CopyChange] = field(default_factory=list)
    foreign: list[CopyChange] = field(default_factory=list)
    written: list[str] = field(default_factory=list)


def upgrade_repository(start: Path, *, write: bool = True) -> UpgradeResult:
    """Compare the copies of the repository around `start` with the installed tfgen's and,
    with `write`, rewrite every one that differs."""
    root = layout.find_root(cwd=start) or start
    found = stale_copies(root)
    result = UpgradeResult(root=root,
                           changes=[c for c in found if c.shipped is not None],
                           foreign=[c for c in found if c.shipped is None])
    if write and result.changes:
        result.written = write_files(root, {c.path: c.shipped for c in result.changes
                                            if c.shipped is not None})
    return result


def next_step(result: UpgradeResult, *, wrote: bool) -> str:
    """The closing sentence: what was found or done, and what to do next."""
    if not result.changes:
        return ("the chart and schemas are the installed tfgen's; nothing to upgrade"
                + (_foreign(result) and f" ({_foreign(result)})"))
    what = f"{counted(len(result.changes), 'file')} of {', '.join(_folders(result))}"
    if wrote:
        return (f"upgraded {what} to the installed tfgen's; next: `tfgen render` (the values "
                "may change with the chart), `tfgen check`, then commit"
                + (f"; {_foreign(result)}" if result.foreign else ""))
    verb = "differs" if len(result.changes) == 1 else "differ"
    return (f"{what} {verb} from the installed tfgen's ({_in_force(result)}); `tfgen upgrade` "
            "rewrites them")


def _in_force(result: UpgradeResult) -> str:
    """Which copy is in force, for each folder that differs."""
    return "; ".join(f"{folder}: {IN_FORCE[folder.rstrip('/')]}" for folder in _folders(result))


def _folders(result: UpgradeResult) -> list[str]:
    return sorted({c.folder + "/" for c in result.changes})


def _foreign(result: UpgradeResult) -> str:
    if not result.foreign:
        return ""
    names = ", ".join(c.path for c in result.foreign)
    return f"left in place, not shipped by tfgen: {names}"


__all__ = ["UpgradeResult", "next_step", "upgrade_repository"]
