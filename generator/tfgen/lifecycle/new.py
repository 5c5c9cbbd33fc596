"""`tfgen new` and `tfgen rerun`: a new experiment file, from options or from an existing spec.

From options, the spec is built as data (defaults from tfgen.yaml: the namespace, and the
image when it sets one) and written by tfgen's canonical YAML writer. From an existing spec,
its text is copied (comments and layout kept) and everything that identifies the old run is
changed at the positions the text's nodes give: the name, and every string under `spec` that
contains the old name as a whole name (log and checkpoint directories, args, env values, the
Ingress path); images and data paths without the name are kept. Either way the new spec is
validated next to the repository's others (a log directory the old run still uses is refused
there, on the field to change) and written atomically, never over an existing file.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import OptionsError, ProblemsFound
from ..importer import git_email
from ..importer.write import MODELINE, problems_of, refuse_blocked, target, write_new
from ..render.generated import dump_yaml
from ..repo import chart, layout, naming
from ..repo.files import read_input
from ..validate.checked import lookup
from ..validate.config import RepoConfig, load_config
from .edit import TextEdit, compose, find, renamer, scalars

# Fields a copy keeps even when they contain the old name: what the run uses, not what it
# writes (images, the claim and NAS server it mounts).
KEPT_KEYS = frozenset({"image", "existingClaim", "server"})


@dataclass(frozen=True)
class Roles:
    """The topology `tfgen new` writes without --from."""

    workers: int = 2
    ps: int = 1
    gpus: int = 0


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


@dataclass
class Created:
    """The spec written: its name, where (as shown), and its text."""

    name: str
    path: str
    text: str


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
    each: dict[str, Any] = {"gpus": roles.gpus} if roles.gpus else {}
    spec: dict[str, Any] = {"image": image}
    if options.command:
        spec["command"] = shlex.split(options.command)
    spec["args"] = [f"--log_dir={log_dir}"]
    spec["roles"] = {"master": {"replicas": 1, **each}}
    if roles.workers:
        spec["roles"]["worker"] = {"replicas": roles.workers, **each}
    if roles.ps:
        spec["roles"]["ps"] = {"replicas": roles.ps}
    spec["storage"] = {"nas": {"path": mount}, "mountPath": mount}
    spec["tensorboard"] = {"logDir": log_dir}
    namespace = options.namespace or lookup(defaults, "metadata", "namespace") or "default"
    metadata = {"name": name, "namespace": namespace, "owner": options.owner}
    return {"apiVersion": "tfgen.io/v1", "kind": "Experiment", "metadata": metadata,
            "spec": spec}


def _rename(edit: TextEdit, root: Any, old: str, new: str) -> None:
    """Rename the run where the text names it: its name, and strings under spec (but those
    of KEPT_KEYS) that contain the old name as a whole name."""
    rename = renamer(old, new)
    for scalar in scalars(root):
        if scalar.path == ("metadata", "name"):
            edit.replace(scalar, new)
        elif scalar.path[:1] == ("spec",) and not KEPT_KEYS & set(scalar.path):
            renamed = rename(scalar.value)
            if renamed != scalar.value:
                edit.replace(scalar, renamed)


def _set_options(edit: TextEdit, metadata: Any, spec: Any, options: NewOptions,
                 shown: str) -> None:
    """Make the copy active, and set what the options replace."""
    if lookup_node_value(spec, "lifecycle") == chart.RETIRED:
        edit.set_in_mapping(spec, "lifecycle", chart.ACTIVE, shown)
    for key, value in (("owner", options.owner), ("namespace", options.namespace)):
        if value:
            edit.set_in_mapping(metadata, key, value, shown)
    if options.image:
        edit.set_in_mapping(spec, "image", options.image, shown)


def _mark_rerun(edit: TextEdit, metadata: Any, shown: str, old: str) -> str:
    """The edited text with the annotation saying it reruns `old`."""
    annotations = find(metadata, ("annotations",))
    if annotations is None:
        edit.set_in_mapping(metadata, "annotations", "{}", shown, raw=True)
        return _annotate(edit.apply(), shown, old)
    edit.set_in_mapping(annotations, naming.RERUN_ANNOTATION, old, shown)
    return edit.apply()


def copied_text(text: str, shown: str, old: str, new: str, options: NewOptions) -> str:
    """The text of spec `old` as spec `new`: renamed where it names the old run, active, and
    (for a rerun) annotated with where it came from."""
    root = compose(text, shown)
    edit = TextEdit(text)
    _rename(edit, root, old, new)
    metadata, spec = find(root, ("metadata",)), find(root, ("spec",))
    if metadata is None or spec is None:
        raise OptionsError(f"{shown}: no metadata or spec to copy; fix it first "
                           f"(`tfgen validate {shown}`)")
    _set_options(edit, metadata, spec, options, shown)
    if options.rerun:
        return _mark_rerun(edit, metadata, shown, old)
    return edit.apply()


def _annotate(text: str, shown: str, old: str) -> str:
    """Set the rerun annotation in a text whose metadata has an annotations mapping."""
    annotations = find(compose(text, shown), ("metadata", "annotations"))
    assert annotations is not None
    edit = TextEdit(text)
    edit.set_in_mapping(annotations, naming.RERUN_ANNOTATION, old, shown)
    return edit.apply()


def lookup_node_value(mapping: Any, key: str) -> str | None:
    node = find(mapping, (key,))
    return str(node.value) if node is not None and isinstance(node.value, str) else None


def _fresh_text(name: str, config: RepoConfig, options: NewOptions) -> str:
    if not options.owner:
        raise OptionsError("--owner is needed: every spec names who answers for it "
                           "(metadata.owner), and Git has no user.email here to use")
    return MODELINE + dump_yaml(_fresh_spec(name, config, options))


def _copied_text(name: str, config: RepoConfig, options: NewOptions, source: str,
                 cwd: Path | None) -> str:
    if options.roles is not None or options.command:
        raise OptionsError("--workers, --ps, --gpus and --command build a new spec; with "
                           "--from, edit the copy instead")
    old_path = layout.experiment_path(source, cwd)
    old_shown = layout.shown(old_path, config.root)
    old = old_path.name.rpartition(".")[0]
    raw = read_input(old_path, old_shown, config.root)
    return copied_text(raw.decode("utf-8"), old_shown, old, name, options)


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
    if options.source is None:
        text = _fresh_text(name, config, options)
    else:
        text = _copied_text(name, config, options, options.source, cwd)
    problems = problems_of(config, name, text)
    if problems:
        raise ProblemsFound(problems, f"{shown} would not be valid (the problems name its "
                            "fields); nothing written")
    refuse_blocked(config, [name])
    write_new(path, text)
    return Created(name, shown, text)
