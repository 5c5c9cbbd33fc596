"""The names of the objects each experiment renders, as the chart names them, and two
experiments naming the same object in one namespace.

Every run of a sweep is a TFJob (and a NetworkPolicy) `<name>-<suffix>`; the TensorBoard's
Deployment, Service, Ingress and NetworkPolicy are `<name>-tensorboard`; the claim is
`<name>-data`. Different experiments can still arrive at the same name (sweep `a` with run
`b-c` beside experiment `a-b` with run `c`: both make `a-b-c`), and then they fight over the
object in the cluster. The gate finds the clash on the rendered objects; this module finds it
in the specs, at the line to change, before anything is rendered. (The pods and Services the
training operator makes, `<job>-<type>-<index>`, end in the index, so two of them clash only
when their TFJobs do.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...problems import Problem
from ...repo import naming
from ..experiment import sweep
from ..experiment.checked import Checked, Collector, lookup
from ..schema.messages import shown
from ..yaml.document import PointerParts


def _runs(spec: dict[str, Any], max_runs: int) -> list[sweep.Run]:
    try:
        if sweep.run_count(spec) > max_runs:
            return []  # refused by its count (sweep.py), never expanded
        return sweep.runs(spec)
    except (TypeError, ValueError, KeyError, AttributeError):
        return []  # a sweep too broken to expand: its own problems say why


def object_names(data: dict[str, Any], max_runs: int
                 ) -> Iterator[tuple[str, PointerParts, str]]:
    """(name, the spec field it comes from, what it names) of every object the experiment
    renders in its namespace, the claim aside (unique with the experiment's name)."""
    name, spec = lookup(data, "metadata", "name"), data.get("spec")
    if not naming.is_experiment_name(name) or not isinstance(spec, dict):
        return
    for run in _runs(spec, max_runs):
        where: PointerParts = ("spec", "sweep") if run.suffix else ("metadata", "name")
        what = f"the TFJob of run {run.suffix}" if run.suffix else "the TFJob"
        yield naming.job_name(name, run.suffix), where, what
    if lookup(spec, "tensorboard", "enabled") is not False:
        yield naming.tensorboard_name(name), ("metadata", "name"), "the TensorBoard"


def name_clash_problems(experiments: Sequence[Checked], max_runs: int) -> list[Problem]:
    """Each experiment that names an object another experiment of its namespace names too
    (`max_runs`: tfgen.yaml's sweep.maxRuns; a larger sweep is refused, not expanded)."""
    owners: dict[tuple[str, str], list[tuple[Checked, PointerParts, str]]] = {}
    for item in experiments:
        namespace = lookup(item.data, "metadata", "namespace")
        for name, where, what in object_names(item.data, max_runs):
            owners.setdefault((str(namespace), name), []).append((item, where, what))
    problems: list[Problem] = []
    for (namespace, name), found in owners.items():
        if len({repr(lookup(i.data, "metadata", "name")) for i, _, _ in found}) < 2:
            continue  # one name twice: the duplicate name is the problem (names.py says so)
        for item, where, what in found:
            others = ", ".join(f"{o.shown} ({w})" for o, _, w in found if o is not item)
            out = Collector(item.locator)
            out.add(where, f"{what} is named {shown(name)} in namespace {namespace}, and so is "
                    f"an object of {others}: they would fight over it in the cluster",
                    "rename one experiment, or change the sweep's values", key=False)
            problems += out.problems
    return problems
