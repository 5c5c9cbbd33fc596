"""`tfgen retire`: retire an experiment in Git, or remove it once retired.

Retiring sets `spec.lifecycle: retired` in the spec's text (comments kept): the chart then
renders only the volume and claim, so Argo CD prunes its runs' jobs (the TFJobs or JobSets its
runtime makes), the TensorBoard (unless `tensorboard.keep`) and the NetworkPolicies while the
data stays bound. `--delete` removes the spec and its generated folder; the Application is
deleted by hand after the merge, in the order argo/README.md ("Removing an experiment")
explains. `--finished` retires, in one go, every active experiment whose runs a cluster listing
(`kubectl get tfjobs,jobsets -A -o yaml`) shows finished, each run by the job of its own
runtime and that runtime's `finished_conditions`: a finished run that stays active in Git still
counts against its namespace's GPU quota.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OptionsError
from ..importer.manifests import read_manifests
from ..render import apply_plan, plan_repository
from ..render.write import blocked_paths, replace_file
from ..repo import chart, layout, naming, runtimes
from ..repo.files import read_input
from ..validate import validate_repo
from ..validate.config.load import RepoConfig, load_config
from ..validate.experiment import sweep
from ..validate.experiments import check_file
from .edit import TextEdit, compose, find

# Where the order of a removal and what happens to the data are explained, once.
REMOVAL_DOC = "argo/README.md (Removing an experiment)"


@dataclass
class Retired:
    """What a retire did: the spec (as shown), whether it changed, what was removed, and
    whether argo/ was rendered again (else the user is told to)."""

    name: str
    path: str
    changed: bool
    removed: list[str] = field(default_factory=list)
    rendered: bool = False
    kind: str = runtimes.DEFAULT.kind  # the kind of its runs' jobs (a TFJob, a JobSet)


def retire_experiment(argument: str, *, delete: bool = False, cwd: Path | None = None) -> Retired:
    """Set spec.lifecycle: retired in the spec (idempotent), or with `delete` remove the spec
    and its generated folder and render argo/ again."""
    config = load_config(cwd=cwd)
    if config.path is None:
        raise OptionsError(f"{(cwd or Path.cwd()).resolve()}: not inside a tfgen repository")
    path = layout.experiment_path(argument, cwd)
    rel = layout.spec_in_repository(config.root, path, argument)
    path, shown = config.root / rel, rel
    name = path.name.rpartition(".")[0]
    text = read_input(path, shown, config.root).decode("utf-8")
    if delete:
        return _delete(config.root, path, shown, name)
    spec = find(compose(text, shown), ("spec",))
    if spec is None:
        raise OptionsError(f"{shown}: no spec to retire; fix it first (`tfgen validate`)")
    kind = _runtime(config, path, shown, text).kind
    current = find(spec, ("lifecycle",))
    if current is not None and getattr(current, "value", None) == chart.RETIRED:
        return Retired(name, shown, changed=False, kind=kind)
    edit = TextEdit(text)
    edit.set_in_mapping(spec, chart.LIFECYCLE_KEY, chart.RETIRED, shown)
    replace_file(path, edit.apply())
    return Retired(name, shown, changed=True, kind=kind)


def _runtime(config: RepoConfig, path: Path, shown: str, text: str) -> runtimes.Runtime:
    """The runtime of a spec, its namespace's default filled in, as validate reads it."""
    checked, _ = check_file(path, shown, text.encode("utf-8"), config)
    spec = checked.data.get("spec") if checked is not None else None
    return runtimes.by_name(spec.get("runtime") if isinstance(spec, dict) else None)


def _delete(root: Path, path: Path, shown: str, name: str) -> Retired:
    result = Retired(name, shown, changed=True, removed=[shown])
    generated = layout.generated_folder(name)
    # every path the removal touches, checked before the first is removed: never half-retired
    blocked = blocked_paths(root, [shown], folders=[generated])
    if blocked:
        raise OptionsError(f"nothing removed: {'; '.join(blocked)}; tfgen removes only the "
                           "spec and the folder it generated (remove the link or file by hand)")
    os.unlink(path)
    folder = root / generated
    if folder.is_dir():
        shutil.rmtree(folder)
        result.removed.append(layout.shown(folder, root) + "/")
    plan, problems = plan_repository(root)
    if plan is not None and not plan.problems:  # (`problems`: then the specs' warnings)
        apply_plan(plan, prune=True)
        result.rendered = True
    return result


def delete_command(name: str) -> str:
    """The command that removes the Application (and, cascading, its objects but the kept
    PV and PVC) after the merge."""
    return f"argocd app delete {name} --cascade"


JobId = tuple[str, str, str]  # the runtime's name, namespace, name


def finished_jobs(listing: Path) -> set[JobId]:
    """Every job of a runtime the listing shows finished: one of its runtime's
    `finished_conditions` True (a TFJob Succeeded or Failed, a JobSet Completed or Failed)."""
    done = set()
    for job in read_manifests([listing]):
        runtime = runtimes.of_object(job.api_version, job.kind)
        conditions = job.get("status", "conditions")
        if runtime is None or not isinstance(conditions, list):
            continue
        if any(isinstance(c, dict) and c.get("type") in runtime.finished_conditions
               and c.get("status") == "True" for c in conditions):
            done.add((runtime.name, job.namespace or "default", job.name))
    return done


@dataclass
class Finished:
    """What `retire --finished` did: each experiment retired, and how many active ones are
    still running (not all their runs finished, or not in the listing)."""

    retired: list[Retired] = field(default_factory=list)
    running: int = 0


def retire_finished(listing: Path, *, cwd: Path | None = None) -> Finished:
    """Retire every active experiment all of whose runs (each job of a sweep, of the
    experiment's runtime) the listing shows finished; the others are left as they are."""
    done = finished_jobs(listing)
    result = Finished()
    for experiment in validate_repo(cwd=cwd).experiments:
        spec = experiment.spec
        if spec.get("lifecycle") == chart.RETIRED:
            continue
        # a run is finished when the job of its own runtime is (not an older one of the name)
        runtime = runtimes.by_name(spec.get("runtime")).name
        jobs = {naming.job_name(experiment.name, run.suffix) for run in sweep.runs(spec)}
        if all((runtime, experiment.namespace, job) in done for job in jobs):
            result.retired.append(retire_experiment(str(experiment.source), cwd=cwd))
        else:
            result.running += 1
    return result
