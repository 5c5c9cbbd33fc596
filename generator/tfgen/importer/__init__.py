"""The import stage: existing training jobs, PV/PVC and TensorBoard manifests -> specs.

`import_manifests` is the way in (`tfgen import`): it reads the input (`manifests`), brings
each training job to one shape (a TFJob of any API version: `versions`; a JobSet of the shape
tfgen renders, through the TFJob it stands for: `jobsets`), maps it with its claim, volume and
TensorBoard to a spec (`mapping`), validates each spec as `tfgen validate` would, and writes
them only when every one is valid and new (`write`). Nothing is dropped silently: the result
lists every input field no spec carries, with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import OptionsError, ProblemsFound, TfgenError
from ..gate.helm.command import find_helm
from ..problems import Problem, errors_of, warnings_of
from ..repo import chart, layout, runtimes
from ..run.explain import chart_path, render_values
from ..validate.config.load import RepoConfig, load_config
from ..validate.experiment.logdir import move_log_dir
from ..validate.experiments import check_file
from ..validate.rules.values import build_values
from .jobs import Job, read_job, task_services
from .leftout import LeftOut, leftovers
from .manifests import Manifest, ManifestError, read_manifests
from .mapping import Imported, build_spec
from .write import problems_of, refuse_blocked, spec_text, target, write_new

__all__ = ["ImportRefused", "ImportResult", "ManifestError", "import_manifests"]


@dataclass
class ImportResult:
    """The specs made (name -> text), where they were written, what the input said that they
    do not (`left_out`), and changes in meaning (`notes`)."""

    specs: dict[str, str]
    written: list[str] = field(default_factory=list)
    left_out: LeftOut = field(default_factory=LeftOut)
    notes: list[str] = field(default_factory=list)


def git_email(cwd: Path | None = None) -> str | None:
    """Who runs the import, as Git knows them (`git config user.email`): the default owner."""
    git = shutil.which("git")
    if git is None:
        return None
    found = subprocess.run([git, "config", "user.email"], cwd=cwd, capture_output=True,
                           text=True, check=False)
    return found.stdout.strip() or None if found.returncode == 0 else None


def _repository_for(write: bool, cwd: Path | None) -> RepoConfig:
    config = load_config(cwd=cwd)
    if write and config.path is None:
        raise OptionsError(f"{(cwd or Path.cwd()).resolve()}: not inside a tfgen repository "
                           f"(no {layout.CONFIG_NAME} here or above); run --write in one")
    return config


_KINDS = " or ".join(sorted(runtimes.JOB_KINDS))


def _jobs(manifests: list[Manifest]) -> list[Manifest]:
    """The input's training jobs (any runtime's); ManifestError for none, or for two of one
    name in one namespace."""
    jobs = [m for m in manifests if m.kind in runtimes.JOB_KINDS]
    if not jobs:
        raise ManifestError(f"no {_KINDS} in the input; tfgen import makes one spec per "
                            "training job")
    seen: dict[tuple[str, str], str] = {}
    for job in jobs:
        key = (job.namespace, job.name)
        if key in seen:
            raise ManifestError(f"{job.where}: a second training job named {job.name!r}, a "
                                f"{job.kind} (the first is at {seen[key]}); keep one of them")
        seen[key] = job.where
    return jobs


def _read(job: Manifest, manifests: list[Manifest]) -> Job:
    """A training job in one shape, as its runtime reads it. The Services its runtime makes
    are set aside."""
    read = read_job(job)
    for service in task_services(read, manifests):
        service.runtime_made(())
    return read


def _owner(owner: str | None, cwd: Path | None) -> str:
    owner = owner or git_email(cwd)
    if not owner:
        raise OptionsError("--owner is needed: every spec names who answers for it "
                           "(metadata.owner, e.g. someone@example.com), and Git has no "
                           "user.email here to use instead")
    return owner


def _spec_names(jobs: list[Manifest], name: str | None) -> list[str]:
    names = [name or job.name for job in jobs]
    if len(set(names)) < len(names):
        raise ManifestError("training jobs of the same name in different namespaces would be "
                            "one experiment; import them one at a time with --name")
    return names


def _previewing(config: RepoConfig, imported: list[Imported]) -> RepoConfig:
    """Outside a repository (a preview: --write needs one), the built-in defaults with the
    imported specs' namespaces allowed: which namespaces Argo CD may deploy to is a
    repository's choice, and there is none to ask."""
    namespaces = [*config.namespaces]
    for item in imported:
        namespace = (item.spec.get("metadata") or {}).get("namespace")
        if isinstance(namespace, str) and namespace not in namespaces:
            namespaces.append(namespace)
    data = {**config.data, "argocd": {**config.data["argocd"], "namespaces": namespaces}}
    return replace(config, data=data)


def _move_log_dir(item: Imported, log_dir: str) -> None:
    """The spec's log directory moved to `log_dir` (`--log-dir`), each field changed noted;
    OptionsError when the spec has none."""
    changed = move_log_dir(item.spec, log_dir)
    if not changed:
        raise OptionsError("--log-dir: the imported spec has no tensorboard.logDir to move "
                           "(the input has no TensorBoard on the training job's claim); set "
                           "one in the spec instead")
    item.notes.extend(f"--log-dir: changed {pointer}: {old} -> {new}"
                      for pointer, old, new in changed)


def _refuse_existing(config: RepoConfig, imported: list[Imported]) -> None:
    for item in imported:
        path = target(config, item.name)
        if os.path.lexists(path):
            raise ManifestError(f"{layout.shown(path, config.root)}: exists already; tfgen "
                                "import never overwrites a spec (choose another --name, or "
                                "remove the file)")


def _rendered_again(config: RepoConfig, imported: list[Imported], manifests: list[Manifest]
                    ) -> list[dict[str, Any]]:
    """When the input is tfgen's own rendering (`chart.rendered_by_chart`), the objects the
    chart renders from the one imported spec, so that what it writes again need not be listed;
    nothing for other input, for several specs, or where helm cannot render."""
    if len(imported) != 1 or not any(
            chart.rendered_by_chart(m.get("metadata", "labels")) for m in manifests):
        return []
    item = imported[0]
    path = target(config, item.name)
    text = spec_text(item.spec, [])
    checked, problems = check_file(path, layout.shown(path, config.root),
                                   text.encode("utf-8"), config)
    if checked is None or errors_of(problems):
        return []
    values = build_values(checked.data, cluster_domain=config.cluster_domain)
    try:
        return render_values(values, chart=chart_path(config.root),
                             kube_version=config.kubernetes_version,
                             helm_binary=find_helm(root=config.root))
    except TfgenError:  # no helm here, or it fails: every field is listed, as for any input
        return []


def _validated(config: RepoConfig, manifests: list[Manifest], imported: list[Imported]
               ) -> ImportResult:
    """The specs' texts, what they leave out and the notes; ImportRefused if any is
    invalid."""
    used = [m for item in imported for m in item.used]
    again = _rendered_again(config, imported, manifests)
    result = ImportResult(specs={}, left_out=leftovers(manifests, used, again))
    problems: list[Problem] = []
    for item in imported:
        text = spec_text(item.spec, [m.shown for m in item.used])
        result.specs[item.name] = text
        result.notes.extend(item.notes)
        problems += problems_of(config, item.name, text)
    if errors_of(problems):
        raise ImportRefused(problems, "the imported spec would not be valid (the problems "
                            "name its fields; the spec is shown as it would be); nothing "
                            "written: fix those in the input, or with --name, --log-dir",
                            result.specs)
    result.notes.extend(p.text() for p in sorted(warnings_of(problems)))
    return result


class ImportRefused(ProblemsFound):
    """An imported spec would not be valid: the problems, and every spec as it would be
    (name -> text), to show what to fix."""

    def __init__(self, problems: list[Problem], message: str, specs: dict[str, str]) -> None:
        super().__init__(problems, message)
        self.specs = specs


def import_manifests(
    paths: Sequence[Path | str], *, name: str | None = None, owner: str | None = None,
    write: bool = False, cwd: Path | None = None, log_dir: str | None = None,
) -> ImportResult:
    """Read `paths`, make one spec per training job, validate every one and, with `write`,
    write them to experiments/ (all or none); `log_dir` moves the spec's log directory (and
    every arg and env value that used it). ManifestError for input that cannot be imported,
    ImportRefused when a spec would be invalid, OptionsError for options that do not fit."""
    config = _repository_for(write, cwd)
    manifests = read_manifests(paths)
    jobs = _jobs(manifests)
    for option, value in (("--name", name), ("--log-dir", log_dir)):
        if value is not None and len(jobs) > 1:
            raise OptionsError(f"{option} is for one spec, and the input has {len(jobs)} "
                               f"training jobs; import them one at a time or without {option}")
    owner = _owner(owner, cwd)
    imported: list[Imported] = [
        build_spec(_read(job, manifests), manifests, spec_name, owner)
        for job, spec_name in zip(jobs, _spec_names(jobs, name), strict=True)
    ]
    if log_dir is not None:
        _move_log_dir(imported[0], log_dir)
    if config.path is None:
        config = _previewing(config, imported)
    if write:  # said first: a spec that exists would also fail validation as a duplicate
        refuse_blocked(config, [item.name for item in imported])
        _refuse_existing(config, imported)
    result = _validated(config, manifests, imported)
    if write:
        for spec_name, text in result.specs.items():
            path = target(config, spec_name)
            write_new(path, text)
            result.written.append(layout.shown(path, config.root))
    return result
