"""`tfgen new` and `tfgen rerun`: a new experiment file, from options or from an existing spec.

From options, the spec is built as data (defaults from tfgen.yaml: the namespace, and the
image when it sets one) and written by tfgen's canonical YAML writer. From an existing spec,
its text is copied (`copy.py`: comments and layout kept, everything that identifies the old
run changed, a log directory of its own). Either way the new spec is validated next to the
repository's others and written atomically, never over an existing file.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..errors import OptionsError, ProblemsFound
from ..importer import git_email
from ..importer.write import MODELINE, problems_of, refuse_blocked, target, write_new
from ..problems import Problem, errors_of, warnings_of
from ..render.generated import dump_yaml
from ..repo import layout, naming
from ..repo.files import read_input
from ..repo.yamlread import SafeLoader
from ..validate.config.load import NAMESPACE_DEFAULTS, RepoConfig, load_config
from ..validate.experiment.checked import lookup
from ..validate.experiments import check_file
from ..validate.yaml.document import pointer_text
from .copy import EMPTY, Change, CopyRequest, copied_text


@dataclass(frozen=True)
class Roles:
    """The topology `tfgen new` writes without --from: a chief (TensorFlow 2's coordinator;
    `master` is a task type tf.distribute refuses), workers with `gpus` each, parameter
    servers. The chief gets `chief_gpus`; by default none beside parameter servers (there it
    only coordinates), the workers' count without them (there it trains as a worker does)."""

    workers: int = 2
    ps: int = 1
    gpus: int = 0
    chief_gpus: int | None = None

    def chief_gpu_count(self) -> int:
        if self.chief_gpus is not None:
            return self.chief_gpus
        return 0 if self.ps else self.gpus


@dataclass(frozen=True)
class NewOptions:
    """What `tfgen new` (and `tfgen rerun`) are asked for besides the name. Without `source`
    the spec is built from `image`, `command` and `roles`; with it, `source`'s spec is copied
    and `owner`, `namespace` and `image` replace what it says; `rerun` marks the copy as a
    rerun of `source`."""

    source: str | None = None
    owner: str | None = None
    namespace: str | None = None
    image: str | None = None
    command: str | None = None
    roles: Roles | None = None
    rerun: bool = False
    log_dir: str | None = None  # a copy's log directory (default: derived, see copy.py)
    # spec.runtime, spec.queue and spec.priority (None: not written, so the namespace's
    # policy defaults apply; a queue or priority "" opts out of the namespace's)
    runtime: str | None = None
    queue: str | None = None
    priority: str | None = None
    cluster: str | None = None  # spec.cluster (None: not written, the namespace's cluster)

    def scheduling(self) -> dict[str, str]:
        """The spec fields of the cluster, the runtime and the queue that were asked for."""
        return {key: value for key, value in (("cluster", self.cluster),
                                              ("runtime", self.runtime), ("queue", self.queue),
                                              ("priority", self.priority))
                if value is not None}


@dataclass
class Created:
    """The spec written: its name, where (as shown), its text, and (for a copy) each field
    changed from the source."""

    name: str
    path: str
    text: str
    changes: list[Change] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)  # what `tfgen validate` will warn of
    notes: list[str] = field(default_factory=list)  # what to know of the copy before editing it


def check_name(name: str) -> None:
    """The experiment-name rule validate applies (naming.py), said before anything is read."""
    if not naming.is_experiment_name(name):
        raise OptionsError(f"{name!r} is not a valid experiment name: it {naming.NAME_RULE}")
    if name in naming.RESERVED_NAMES:
        raise OptionsError(f"{name!r} is the name of {naming.RESERVED_NAMES[name]}; choose "
                           "another experiment name")


def _repository(cwd: Path | None) -> RepoConfig:
    config = load_config(cwd=cwd)
    if config.path is None:
        raise OptionsError(f"{(cwd or Path.cwd()).resolve()}: not inside a tfgen repository "
                           f"(no {layout.CONFIG_NAME} here or above)")
    return config


def _fresh_spec(name: str, config: RepoConfig, options: NewOptions) -> dict[str, Any]:
    defaults = config.defaults
    image = options.image or lookup(defaults, "spec", "image")
    if not image:
        raise OptionsError("--image is needed: tfgen.yaml's defaults set no spec.image")
    roles = options.roles or Roles()
    mount = "/training"
    log_dir = f"{mount}/{name}/logs"
    spec: dict[str, Any] = {**options.scheduling(), "image": image}
    if options.command:
        spec["command"] = shlex.split(options.command)
    spec["args"] = [f"--log_dir={log_dir}"]
    spec["roles"] = {"chief": _role(1, roles.chief_gpu_count())}
    if roles.workers:
        spec["roles"]["worker"] = _role(roles.workers, roles.gpus)
    if roles.ps:
        spec["roles"]["ps"] = {"replicas": roles.ps}
    spec["storage"] = {"nas": {"path": mount}, "mountPath": mount}
    spec["tensorboard"] = {"logDir": log_dir}
    namespace = options.namespace or lookup(defaults, "metadata", "namespace") or "default"
    metadata = {"name": name, "namespace": namespace, "owner": options.owner}
    return {"apiVersion": "tfgen.io/v1", "kind": "Experiment", "metadata": metadata,
            "spec": spec}


def _role(replicas: int, gpus: int) -> dict[str, Any]:
    return {"replicas": replicas, "gpus": gpus} if gpus else {"replicas": replicas}


def _fresh_text(name: str, config: RepoConfig, options: NewOptions) -> str:
    if not options.owner:
        raise OptionsError("--owner is needed: every spec names who answers for it "
                           "(metadata.owner), and Git has no user.email here to use")
    return MODELINE + dump_yaml(_fresh_spec(name, config, options))


def _copied_text(name: str, config: RepoConfig, options: NewOptions, source: str,
                 cwd: Path | None) -> tuple[str, list[Change]]:
    if options.roles is not None or options.command:
        raise OptionsError("--workers, --ps, --gpus, --chief-gpus and --command build a new "
                           "spec; with --from, edit the copy instead")
    old_path = layout.experiment_path(source, cwd)
    old_shown = layout.shown(old_path)  # a path given is the user's, relative to where they are
    old = old_path.name.rpartition(".")[0]
    raw = read_input(old_path, old_shown, config.root)
    request = CopyRequest(old, name, owner=options.owner, namespace=options.namespace,
                          image=options.image, log_dir=options.log_dir, rerun=options.rerun,
                          scheduling=options.scheduling())
    return copied_text(raw.decode("utf-8"), old_shown, request)


def _causes(config: RepoConfig, options: NewOptions, path: Path, text: str,
            problems: list[Problem]) -> str:
    """What put a refused runtime, queue or priority into the spec, since the spec the problems
    name is not written: the option (` with --runtime jobset`), or the namespace's default
    (` with policy.ml.runtime jobset of tfgen.yaml:12, which --runtime overrides`)."""
    at = {problem.pointer for problem in problems}
    own = lookup(yaml.load(text, Loader=SafeLoader), "spec")
    namespace = _namespace_of(config, path, text)
    causes = []
    for key in NAMESPACE_DEFAULTS:
        if pointer_text(("spec", key)) not in at:
            continue
        given = options.scheduling().get(key)
        if given is not None:
            causes.append(f"--{key} {given or EMPTY}")
        elif isinstance(own, dict) and key not in own and isinstance(namespace, str):
            value = config.namespace_policy(namespace).get(key)
            causes.append(f"policy.{namespace}.{key} {value} of "
                          f"{config.policy_source(namespace, key)}, which --{key} overrides")
    if options.source is not None and options.namespace is not None:
        causes.append(f"--namespace {options.namespace} (its policy in tfgen.yaml judges the "
                      "copy)")
    return f" with {'; '.join(causes)}" if causes else ""


def _master_note(text: str) -> list[str]:
    """A copy that keeps a `master`: TensorFlow 2's tf.distribute refuses that task type."""
    master, chief = naming.LEADER_ROLES
    if lookup(yaml.load(text, Loader=SafeLoader), "spec", "roles", master) is None:
        return []
    return [f"the copy keeps roles.{master}, TensorFlow 1's name for the coordinator; "
            f"TensorFlow 2's tf.distribute refuses the task type {master} (\"Disallowed task "
            f"type\"): for TensorFlow 2 code rename `{master}:` to `{chief}:` under spec.roles "
            "(the same fields), as `tfgen new` writes it"]


def _namespace_of(config: RepoConfig, path: Path, text: str) -> Any:
    """The namespace the spec has once tfgen.yaml's defaults are under it (its metadata's
    value as it is: not necessarily a string)."""
    checked, _ = check_file(path, layout.shown(path, config.root), text.encode("utf-8"), config)
    return lookup(checked.data if checked else None, "metadata", "namespace")


def new_experiment(name: str, options: NewOptions | None = None, *,
                   cwd: Path | None = None) -> Created:
    """Write experiments/<name>.yaml (from `options.source` when given); ProblemsFound when
    the new spec would not be valid, OptionsError for a bad name, an existing file or a missing
    option. Nothing is written unless the spec is valid."""
    check_name(name)
    config = _repository(cwd)
    path = target(config, name)
    shown = layout.shown(path, config.root)
    if os.path.lexists(path):
        raise OptionsError(f"{shown}: exists already; tfgen never overwrites a spec (choose "
                           "another name)")
    options = options or NewOptions()
    options = replace(options, owner=options.owner or git_email(cwd))
    changes: list[Change] = []
    if options.source is None:
        if options.log_dir:
            raise OptionsError("--log-dir is for a copy (with --from); a new spec's log "
                               f"directory is /training/{name}/logs: edit it there")
        text = _fresh_text(name, config, options)
    else:
        text, changes = _copied_text(name, config, options, options.source, cwd)
    problems = problems_of(config, name, text)
    if errors_of(problems):
        cause = _causes(config, options, path, text, problems)
        raise ProblemsFound(problems, f"{shown} would not be valid{cause} (the problems name "
                            "its fields); nothing written")
    refuse_blocked(config, [name])
    write_new(path, text)
    notes = _master_note(text) if options.source is not None else []
    return Created(name, shown, text, changes, warnings_of(problems), notes)
