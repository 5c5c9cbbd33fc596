"""Semantic rules the JSON Schema cannot express on one experiment, each giving a Problem in
plain words.

They look at one experiment (after repo defaults and schema defaults are applied): the
TensorBoard log directory lies strictly inside the mounted volume, the role set makes a working
TensorFlow cluster, every role has an image, the file is named after the experiment, the name
is not one tfgen reserves, the namespace is one Argo CD may deploy to, labels stay out of the
prefixes the chart owns, and `ttlSecondsAfterFinished` is refused with the reason (Argo CD
would recreate the deleted TFJob and train again). Rules read the data defensively, because
they also run on files that have schema errors (so that every problem of a file is reported at
once). What the Kubernetes API server itself refuses is checked in `api`; the rules across
files are in `across/`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ...problems import Problem
from ...repo import chart, naming
from ..config.rules import platform_problem
from ..experiment.checked import Checked, Collector, lookup
from ..schema.messages import shown
from ..yaml.document import PointerParts, pointer_text
from .api import api_problems, plain_absolute

TTL_KEY = "ttlSecondsAfterFinished"
TTL_MESSAGE = (
    "ttlSecondsAfterFinished is not allowed: the operator would delete the finished TFJob, "
    "Argo CD self-heal would then recreate it from Git and the training would run again"
)
TTL_HINT = (
    "remove it: a finished TFJob stays until its experiment file leaves Git, and "
    "runPolicy.cleanPodPolicy already removes its pods"
)

def _find_key(data: Any, key: str, parts: PointerParts = ()) -> Iterable[PointerParts]:
    if isinstance(data, dict):
        for name, value in data.items():
            if name == key:
                yield (*parts, name)
            yield from _find_key(value, key, (*parts, name))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _find_key(item, key, (*parts, index))


def _check_ttl(checked: Checked, out: Collector) -> None:
    if TTL_KEY not in checked.text:  # almost always: no walk that builds pointers
        return
    for parts in _find_key(checked.data, TTL_KEY):
        out.add(parts, TTL_MESSAGE, TTL_HINT)


def _check_reserved_keys(metadata: dict[str, Any], out: Collector) -> None:
    for where in ("labels", "annotations"):
        keys = metadata.get(where)
        if not isinstance(keys, dict):
            continue
        for key in keys:
            if where == "annotations" and key in naming.SOURCE_ANNOTATIONS:
                continue  # written by `tfgen rerun` and `tfgen new --from`
            if key in naming.RESERVED_KEYS:
                field = naming.RESERVED_KEYS[key]
                out.add(("metadata", where, key), f"{shown(str(key))} is set by tfgen itself "
                        f"from {field}", f"remove it and set {field} instead")
                continue
            prefix = next((p for p in chart.RESERVED_PREFIXES if str(key).startswith(p)), None)
            if prefix:
                out.add(
                    ("metadata", where, key),
                    f"{shown(str(key))} is set by tfgen itself ({prefix} is reserved)",
                    "use a key of your own, e.g. " + shown("team/" + str(key).split("/", 1)[1]),
                )


# Roles that do nothing without one of some others: (role, the others, message, hint).
_NEEDS_ANOTHER_ROLE = (
    ("ps", ("worker",), "parameter servers without workers train nothing",
     "add roles.worker: parameter servers only hold variables, workers compute"),
    ("evaluator", naming.TRAINING_ROLES, "an evaluator needs a training role to evaluate",
     "add roles.chief (or master) or roles.worker"),
)


def _check_roles(spec: dict[str, Any], out: Collector) -> None:
    roles = spec.get("roles")
    if not isinstance(roles, dict):
        return
    _check_role_set(roles, out)
    _check_images(spec, roles, out)
    _check_gang(spec, roles, out)


def _check_role_set(roles: dict[str, Any], out: Collector) -> None:
    """The roles make a working TensorFlow cluster: one leader at most, and no role that
    waits on roles the job does not have."""
    leaders = [r for r in naming.LEADER_ROLES if r in roles]
    if len(leaders) > 1:
        out.add(
            ("spec", "roles", leaders[-1]),
            f'has both "{leaders[0]}" and "{leaders[1]}"; TensorFlow allows only one',
            "keep one of them: they are the same job under two names",
        )
    for role, others, message, hint in _NEEDS_ANOTHER_ROLE:
        if role in roles and not any(r in roles for r in others):
            out.add(("spec", "roles", role), message, hint)


def _check_images(spec: dict[str, Any], roles: dict[str, Any], out: Collector) -> None:
    """Every role has an image: its own, or the spec's that it inherits."""
    spec_image = spec.get("image")
    for name, role in roles.items():
        if isinstance(role, dict) and not role.get("image") and not spec_image:
            out.add(
                ("spec", "roles", name),
                f"role {shown(str(name))} has no image",
                f"set spec.image, or spec.roles.{name}.image",
                missing=True,
            )


def _check_gang(spec: dict[str, Any], roles: dict[str, Any], out: Collector) -> None:
    """A gang that needs more pods than the job has would wait for them forever."""
    gang = lookup(spec, "runPolicy", "schedulingPolicy", "minAvailable")
    total = sum(
        r.get("replicas", 1)
        for r in roles.values()
        if isinstance(r, dict) and isinstance(r.get("replicas", 1), int)
    )
    if isinstance(gang, int) and not isinstance(gang, bool) and gang > total:
        out.add(
            ("spec", "runPolicy", "schedulingPolicy", "minAvailable"),
            f"is {gang}, but the job has only {total} replicas: the gang would never start",
            f"at most {total}",
            key=False,
        )


def _check_env(spec: dict[str, Any], out: Collector) -> None:
    lists: list[tuple[PointerParts, Any]] = [(("spec", "env"), spec.get("env"))]
    roles = spec.get("roles")
    if isinstance(roles, dict):
        lists += [(("spec", "roles", n, "env"), lookup(r, "env")) for n, r in roles.items()]
    for parts, env in lists:
        if not isinstance(env, list):
            continue
        seen: dict[str, int] = {}
        for index, item in enumerate(env):
            name = lookup(item, "name")
            if not isinstance(name, str):
                continue
            if name == "TF_CONFIG":
                out.add(
                    (*parts, index, "name"),
                    "TF_CONFIG must not be set",
                    "the training operator writes it for every pod",
                    key=False,
                )
            if name in seen:
                out.add(
                    (*parts, index, "name"),
                    f"variable {shown(name)} is set twice",
                    f"first at {pointer_text((*parts, seen[name]))}",
                    key=False,
                )
            seen.setdefault(name, index)


def _check_storage(spec: dict[str, Any], out: Collector) -> None:
    storage = spec.get("storage")
    tensorboard = spec.get("tensorboard")
    if not isinstance(storage, dict):
        return
    _check_nas_mode(storage, out)
    if not isinstance(tensorboard, dict) or tensorboard.get("enabled") is not True:
        return
    log_dir = tensorboard.get("logDir")
    if log_dir is None:
        where = ("spec", "tensorboard") if "tensorboard" in spec else ("spec",)
        out.add(
            where,
            "TensorBoard is enabled but tensorboard.logDir is not set",
            "set logDir to the event-log directory inside storage.mountPath, "
            "or tensorboard.enabled: false",
            missing=True,
        )
        return
    _check_log_dir_inside(storage.get("mountPath"), log_dir, out)


def _check_nas_mode(storage: dict[str, Any], out: Collector) -> None:
    """`mode` is an option of the flexvolume driver alone."""
    nas = storage.get("nas")
    if isinstance(nas, dict) and nas.get("mode") and nas.get("driver") != "flexvolume":
        out.add(
            ("spec", "storage", "nas", "mode"),
            f'only the flexvolume driver uses mode (driver is "{nas.get("driver")}")',
            "remove mode, or set driver: flexvolume",
        )


def _check_log_dir_inside(mount: Any, log_dir: Any, out: Collector) -> None:
    """TensorBoard only sees the mounted volume: its log directory lies strictly inside."""
    if not (plain_absolute(mount) and plain_absolute(log_dir)):
        return
    root = posixpath.normpath(mount)
    logs = posixpath.normpath(log_dir)
    example = posixpath.join(root, "logs")
    parts = ("spec", "tensorboard", "logDir")
    if logs == root:
        out.add(
            parts,
            f"{shown(log_dir)} is the root of the volume mounted at {shown(root, quoted=False)}",
            f"keep event logs in a sub-directory, e.g. {shown(example, quoted=False)}",
            key=False,
        )
    elif not logs.startswith(root.rstrip("/") + "/"):
        out.add(
            parts,
            f"{shown(log_dir)} is not inside storage.mountPath ({shown(mount, quoted=False)}); "
            "TensorBoard only sees that volume",
            f"e.g. {shown(example, quoted=False)}",
            key=False,
        )


def _check_tensorboard(spec: dict[str, Any], out: Collector) -> None:
    ingress = lookup(spec, "tensorboard", "ingress")
    if not isinstance(ingress, dict):
        return
    if ingress.get("enabled") is True and lookup(spec, "tensorboard", "enabled") is False:
        out.add(
            ("spec", "tensorboard", "ingress", "enabled"),
            "an Ingress needs the TensorBoard it points to",
            "set tensorboard.enabled: true",
        )


def _check_name(name: Any, source: Path, out: Collector) -> None:
    """The file is named after the experiment, and the name is not one tfgen reserves."""
    if naming.is_experiment_name(name) and source.name != f"{name}.yaml":
        out.add(
            ("metadata", "name"),
            f'file is named {shown(source.name)} but the experiment is "{name}"',
            f"rename the file to {name}.yaml: one file per experiment, named after it",
            key=False,
        )
    if isinstance(name, str) and name in naming.RESERVED_NAMES:
        out.add(
            ("metadata", "name"),
            f'"{name}" is the name of {naming.RESERVED_NAMES[name]}',
            "choose another experiment name",
            key=False,
        )


def _check_namespace(namespace: Any, namespaces: Sequence[str] | None,
                     argocd_namespace: str | None, out: Collector) -> None:
    """The namespace is one Argo CD may deploy to, and none the platform keeps for itself."""
    platform = platform_problem(namespace, argocd_namespace)
    if platform:
        out.add(("metadata", "namespace"), *platform, key=False)
    elif namespaces is not None and isinstance(namespace, str) and namespace not in namespaces:
        out.add(
            ("metadata", "namespace"),
            f"namespace {shown(namespace)} is not one Argo CD may deploy to",
            "allowed by tfgen.yaml argocd.namespaces: " + ", ".join(namespaces),
            key=False,
        )


def semantic_problems(checked: Checked, namespaces: Sequence[str] | None = None,
                      argocd_namespace: str | None = None) -> list[Problem]:
    """Rules on one experiment; `namespaces` are those tfgen.yaml allows (None: any), and
    `argocd_namespace` is Argo CD's own."""
    out = Collector(checked.locator)
    data = checked.data
    _check_ttl(checked, out)
    _check_name(lookup(data, "metadata", "name"), checked.source, out)
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        _check_reserved_keys(metadata, out)
    _check_namespace(lookup(data, "metadata", "namespace"), namespaces, argocd_namespace, out)
    api_problems(data, out)
    spec = data.get("spec")
    if isinstance(spec, dict):
        _check_roles(spec, out)
        _check_env(spec, out)
        _check_storage(spec, out)
        _check_tensorboard(spec, out)
    return out.problems
