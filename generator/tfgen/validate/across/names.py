"""Names two experiments may not share: the experiment's own (it names the Argo CD Application)
and the cluster-scoped PersistentVolume derived from it; with them, the log directories
(`logdirs`). Each clash is reported on the files being added or changed where the caller
knows them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ...problems import Problem
from ...repo import naming
from ..experiment.checked import Checked, Collector, lookup
from ..schema.messages import shown
from .logdirs import blamed, collision_problems


def _others(items: Sequence[Checked], item: Checked, limit: int = 3) -> str:
    """The other files of a clash, at most `limit` of them named."""
    paths = [o.shown for o in items[: limit + 1] if o is not item][:limit]
    rest = len(items) - 1 - len(paths)
    return ", ".join(paths) + (f" and {rest} more" if rest else "")


def repo_problems(experiments: Sequence[Checked],
                  focus: Collection[str] | None = None) -> list[Problem]:
    """Rules across files: unique experiment names, unique derived PV names, and log
    directories no two active experiments share (logdirs.py). Each clash is reported on the
    files being added or changed when `focus` names some of them (`logdirs.blamed`)."""
    problems: list[Problem] = []
    by_name, by_pv = _by_names(experiments)
    for name, items in by_name.items():
        if len(items) > 1:
            problems += _clash_problems(
                items, focus, f"experiment name {shown(name)} is also used by ",
                "names must be unique in the repository: they name the Argo CD Application")
    for pv, items in by_pv.items():
        if len(items) < 2 or len({lookup(i.data, "metadata", "name") for i in items}) < 2:
            continue  # same name: already reported above
        problems += _clash_problems(
            items, focus,
            f"PersistentVolume name {shown(pv)} (<namespace>-<name>-data) is also derived by ",
            "PersistentVolumes are cluster-wide; rename one experiment")
    return problems + collision_problems(experiments, focus)


def _by_names(
    experiments: Sequence[Checked],
) -> tuple[dict[str, list[Checked]], dict[str, list[Checked]]]:
    """The experiments by their name, and those on a NAS by the name of the PersistentVolume
    derived from it."""
    by_name: dict[str, list[Checked]] = {}
    by_pv: dict[str, list[Checked]] = {}
    for item in experiments:
        name = lookup(item.data, "metadata", "name")
        namespace = lookup(item.data, "metadata", "namespace")
        if not isinstance(name, str) or not name:
            continue
        by_name.setdefault(name, []).append(item)
        if isinstance(namespace, str) and isinstance(
            lookup(item.data, "spec", "storage", "nas"), dict
        ):
            by_pv.setdefault(naming.volume_name(namespace, name), []).append(item)
    return by_name, by_pv


def _clash_problems(items: Sequence[Checked], focus: Collection[str] | None, said: str,
                    hint: str) -> list[Problem]:
    """One name several files share, at the metadata.name of each file `blamed` for it:
    `said` and the other files."""
    problems: list[Problem] = []
    for item in blamed(items, focus):
        others = _others(items, item)
        out = Collector(item.locator)
        out.add(("metadata", "name"), f"{said}{others}", hint, key=False)
        problems += out.problems
    return problems
