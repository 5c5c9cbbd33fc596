"""Semantic rules the JSON Schema cannot express, each giving a Problem in plain words.

File rules look at one experiment (after repo defaults and schema defaults are applied): the
TensorBoard log directory lies strictly inside the mounted volume, the role set makes a working
TensorFlow cluster, every role has an image, the file is named after the experiment, the name
is not one tfgen reserves, the namespace is one Argo CD may deploy to, labels stay out of the
prefixes the chart owns, and `ttlSecondsAfterFinished` is refused with the
reason (Argo CD would recreate the deleted TFJob and train again). Repository rules look across
files: experiment names and the cluster-scoped PersistentVolume names derived from them must be
unique. Rules read the data defensively, because they also run on files that have schema errors
(so that every problem of a file is reported at once).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..problems import Problem
from ..repo import naming
from .document import Document, Locator, PointerParts, pointer_text
from .loader import load_bytes
from .messages import shown

TTL_KEY = "ttlSecondsAfterFinished"
TTL_MESSAGE = (
    "ttlSecondsAfterFinished is not allowed: the operator would delete the finished TFJob, "
    "Argo CD self-heal would then recreate it from Git and the training would run again"
)
TTL_HINT = (
    "remove it: a finished TFJob stays until its experiment file leaves Git, and "
    "runPolicy.cleanPodPolicy already removes its pods"
)

# Mount targets that would hide what a container needs to run (its system files, the kernel's
# interfaces, the service account token the kubelet mounts) or that the TensorBoard pod already
# mounts (its /tmp scratch volume: the API server refuses two mounts at one path). Each is
# refused as a mount path, and so is everything below the ones in BELOW. "/" itself is refused
# by the mountPath pattern, which the spec schema shares with the chart's values schema.
SYSTEM_DIRECTORIES = ("/tmp",)
SYSTEM_DIRECTORIES_BELOW = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin", "/sys",
    "/usr", "/var/run",
)

# Sane upper bounds of the quantities a spec sets: no node has more, and a typo (an extra
# digit, "8Ti" for "8Gi") should be caught here rather than leave pods Pending forever.
MAX_CPU_CORES = 1024
MAX_MEMORY_BYTES = 16 * 2**40  # 16 TiB per container
MAX_CAPACITY_BYTES = 2**60  # 1 EiB, the nominal size of an elastic NAS
_SUFFIX: dict[str, Decimal | int] = {
    "": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
    "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
    "Pi": 2**50, "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([0-9]*\.?[0-9]+)(m|[kMGTPE]i?|Ki)?$")


def quantity(text: str) -> Decimal | None:
    """A quantity the schema's pattern allowed ("500m", "8Gi", "0.5") as a number; None if not
    one of those forms (the schema reports it)."""
    match = _QUANTITY.match(text)
    if not match:
        return None
    return Decimal(match.group(1)) * _SUFFIX[match.group(2) or ""]


@dataclass
class Checked:
    """One loaded experiment as the rules see it: complete data, where it came from.

    The locator of a file whose verdict was recalled (not checked in this run) is built from
    its bytes when a rule across files first needs to point into it.
    """

    source: Path
    shown: str
    data: dict[str, Any]
    raw: bytes = b""
    config: Document | None = None
    _locator: Locator | None = field(default=None, repr=False)

    @property
    def locator(self) -> Locator:
        if self._locator is None:
            self._locator = Locator(load_bytes(self.raw, self.shown), self.config)
        return self._locator


def lookup(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


class Collector:
    def __init__(self, locator: Locator) -> None:
        self.locator = locator
        self.problems: list[Problem] = []

    def add(
        self,
        parts: PointerParts,
        message: str,
        hint: str = "",
        *,
        key: bool = True,
        missing: bool = False,
    ) -> None:
        self.problems.append(self.locator.problem(parts, message, hint, key=key, missing=missing))


def _find_key(data: Any, key: str, parts: PointerParts = ()) -> Iterable[PointerParts]:
    if isinstance(data, dict):
        for name, value in data.items():
            if name == key:
                yield (*parts, name)
            yield from _find_key(value, key, (*parts, name))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _find_key(item, key, (*parts, index))


def _has_key(data: Any, key: str) -> bool:
    # A quick look before the walk that builds pointers: the key is almost never there.
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if key in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _check_ttl(data: dict[str, Any], out: Collector) -> None:
    if not _has_key(data, TTL_KEY):
        return
    for parts in _find_key(data, TTL_KEY):
        out.add(parts, TTL_MESSAGE, TTL_HINT)


def _check_reserved_keys(metadata: dict[str, Any], out: Collector) -> None:
    for where in ("labels", "annotations"):
        keys = metadata.get(where)
        if not isinstance(keys, dict):
            continue
        for key in keys:
            prefix = next((p for p in naming.RESERVED_PREFIXES if str(key).startswith(p)), None)
            if prefix:
                out.add(
                    ("metadata", where, key),
                    f"{shown(str(key))} is set by tfgen itself ({prefix} is reserved)",
                    "use a key of your own, e.g. " + shown("team/" + str(key).split("/", 1)[1]),
                )


def _check_annotation_size(metadata: dict[str, Any], out: Collector) -> None:
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        return
    # Every object carries these annotations plus the owner's (tfgen.io/owner); the chart's own
    # few (sync wave and options, resource policy) stay far below the margin left for them.
    owned = {**annotations, "tfgen.io/owner": metadata.get("owner")}
    total = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in owned.items())
    margin = 1024
    if total > naming.MAX_ANNOTATIONS_BYTES - margin:
        out.add(
            ("metadata", "annotations"),
            f"annotations take {total} bytes (keys and values, with tfgen.io/owner); Kubernetes "
            f"allows {naming.MAX_ANNOTATIONS_BYTES} bytes per object, and the chart adds a few",
            f"keep them under {naming.MAX_ANNOTATIONS_BYTES - margin} bytes: large data belongs "
            "in a ConfigMap or on the volume",
        )


def _check_key_prefixes(keyed: Iterable[tuple[PointerParts, Any]], out: Collector) -> None:
    """Label-style keys (labels, annotations, node selectors, taint keys) whose DNS prefix is
    longer than Kubernetes allows. `keyed`: (where, mapping or key) pairs."""
    for parts, value in keyed:
        keys = [(parts, value)] if isinstance(value, str) else []
        if isinstance(value, dict):
            keys = [((*parts, k), k) for k in value if isinstance(k, str)]
        for where, key in keys:
            problem = naming.label_key_prefix_problem(key)
            if problem:
                is_key = isinstance(value, dict)
                out.add(where, f"key {shown(key)} is not valid: {problem}", key=is_key)


def _roles(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    roles = spec.get("roles")
    if not isinstance(roles, dict):
        return []
    return [(name, role) for name, role in roles.items() if isinstance(role, dict)]


def _check_tolerations(spec: dict[str, Any], out: Collector) -> None:
    """What the API server refuses in a toleration beyond each field's own grammar."""
    for name, role in _roles(spec):
        tolerations = role.get("tolerations")
        if not isinstance(tolerations, list):
            continue
        for index, item in enumerate(tolerations):
            if not isinstance(item, dict):
                continue
            parts = ("spec", "roles", name, "tolerations", index)
            operator = item.get("operator", "Equal")
            if operator == "Exists" and item.get("value"):
                out.add(
                    (*parts, "value"),
                    "a toleration with operator Exists matches any value and must not set one",
                    "remove value, or use operator: Equal",
                )
            if operator == "Equal" and not item.get("key"):
                out.add(
                    parts,
                    "a toleration without a key must use operator Exists (it then matches "
                    "every taint)",
                    "set key, or operator: Exists",
                )
            if "tolerationSeconds" in item and item.get("effect") != "NoExecute":
                out.add(
                    (*parts, "tolerationSeconds"),
                    "tolerationSeconds only applies to effect NoExecute "
                    f"(effect is {shown(str(item.get('effect', '')))})",
                    "set effect: NoExecute, or remove tolerationSeconds",
                )


def _check_quantities(spec: dict[str, Any], out: Collector) -> None:
    places: list[tuple[PointerParts, Any]] = [
        (("spec", "roles", name), role) for name, role in _roles(spec)
    ]
    tensorboard = spec.get("tensorboard")
    if isinstance(tensorboard, dict):
        places.append((("spec", "tensorboard"), tensorboard))
    for parts, holder in places:
        for key, limit, said in (("cpu", MAX_CPU_CORES, f"{MAX_CPU_CORES} cores"),
                                 ("memory", MAX_MEMORY_BYTES, "16Ti")):
            value = holder.get(key)
            amount = quantity(value) if isinstance(value, str) else None
            if amount is None:
                continue
            if amount > limit:
                out.add(
                    (*parts, key),
                    f"{shown(value)} is more than any node has: at most {said}",
                    "check the number and its suffix (Gi, not Ti)",
                    key=False,
                )
            elif key == "memory" and amount < 2**20:
                out.add(
                    (*parts, key),
                    f"{shown(value)} is less than 1Mi: no container starts with that",
                    "write a size with its suffix, e.g. 512Mi or 8Gi",
                    key=False,
                )
    capacity = lookup(spec, "storage", "nas", "capacity")
    amount = quantity(capacity) if isinstance(capacity, str) else None
    if amount is not None and not 0 < amount <= MAX_CAPACITY_BYTES:
        out.add(
            ("spec", "storage", "nas", "capacity"),
            f"{shown(capacity)} is not a usable volume size: more than 0 and at most 1Ei",
            "e.g. 100Gi",
            key=False,
        )


def _path_problem(path: str) -> str | None:
    """What keeps an absolute path from being the one it seems to be."""
    inner = path.rstrip("/").split("/")[1:] if path not in ("", "/") else []
    dots = next((part for part in inner if part in (".", "..")), None)
    if dots:
        return f'contains a "{dots}" segment (a path must name its directory directly)'
    if "" in inner:
        return 'contains "//" (an empty path segment)'
    return None


def _check_paths(spec: dict[str, Any], out: Collector) -> None:
    storage = spec.get("storage")
    paths: list[PointerParts] = [
        ("spec", "storage", "mountPath"),
        ("spec", "storage", "nas", "path"),
        ("spec", "tensorboard", "logDir"),
        ("spec", "tensorboard", "ingress", "pathPrefix"),
        ("spec", "workingDir"),
    ]
    for parts in paths:
        value = lookup(spec, *(str(p) for p in parts[1:]))
        if not isinstance(value, str) or not value.startswith("/"):
            continue  # the schema reports relative paths
        problem = _path_problem(value)
        if problem:
            normal = shown(posixpath.normpath(value))
            out.add(parts, f"{shown(value)} {problem}", f"write {normal}", key=False)
    mount = storage.get("mountPath") if isinstance(storage, dict) else None
    if isinstance(mount, str) and mount.startswith("/") and not _path_problem(mount):
        target = posixpath.normpath(mount)
        below = next(
            (d for d in SYSTEM_DIRECTORIES_BELOW if target == d or target.startswith(d + "/")),
            None,
        )
        if target in SYSTEM_DIRECTORIES or below:
            out.add(
                ("spec", "storage", "mountPath"),
                f"{shown(mount)} is a system directory"
                + (f" ({below} and everything below it)" if below else "")
                + ": the volume would hide what the containers need there",
                "mount the volume at a directory of its own, e.g. /training or /data",
                key=False,
            )


def _check_roles(spec: dict[str, Any], out: Collector) -> None:
    roles = spec.get("roles")
    if not isinstance(roles, dict):
        return
    base = ("spec", "roles")
    leaders = [r for r in naming.LEADER_ROLES if r in roles]
    if len(leaders) > 1:
        out.add(
            (*base, leaders[-1]),
            f'has both "{leaders[0]}" and "{leaders[1]}"; TensorFlow allows only one',
            "keep one of them: they are the same job under two names",
        )
    if "ps" in roles and "worker" not in roles:
        out.add(
            (*base, "ps"),
            "parameter servers without workers train nothing",
            "add roles.worker: parameter servers only hold variables, workers compute",
        )
    if "evaluator" in roles and not any(r in roles for r in naming.TRAINING_ROLES):
        out.add(
            (*base, "evaluator"),
            "an evaluator needs a training role to evaluate",
            "add roles.chief (or master) or roles.worker",
        )
    spec_image = spec.get("image")
    for name, role in roles.items():
        if isinstance(role, dict) and not role.get("image") and not spec_image:
            out.add(
                (*base, name),
                f"role {shown(str(name))} has no image",
                f"set spec.image, or spec.roles.{name}.image",
                missing=True,
            )
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
    nas = storage.get("nas")
    if isinstance(nas, dict) and nas.get("mode") and nas.get("driver") != "flexvolume":
        out.add(
            ("spec", "storage", "nas", "mode"),
            f'only the flexvolume driver uses mode (driver is "{nas.get("driver")}")',
            "remove mode, or set driver: flexvolume",
        )
    if not isinstance(tensorboard, dict) or tensorboard.get("enabled") is not True:
        return
    mount = storage.get("mountPath")
    log_dir = tensorboard.get("logDir")
    parts = ("spec", "tensorboard", "logDir")
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
    if not (
        isinstance(mount, str)
        and isinstance(log_dir, str)
        and mount.startswith("/")
        and log_dir.startswith("/")
    ):
        return  # the schema reports non-absolute paths
    if _path_problem(log_dir) or _path_problem(mount):
        return  # _check_paths reports it
    root = posixpath.normpath(mount)
    logs = posixpath.normpath(log_dir)
    example = posixpath.join(root, "logs")
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


def file_problems(checked: Checked, namespaces: Sequence[str] | None = None) -> list[Problem]:
    """Rules on one experiment; `namespaces` are those tfgen.yaml allows (None: any)."""
    out = Collector(checked.locator)
    data = checked.data
    _check_ttl(data, out)
    name = lookup(data, "metadata", "name")
    if naming.is_experiment_name(name) and checked.source.name != f"{name}.yaml":
        out.add(
            ("metadata", "name"),
            f'file is named {shown(checked.source.name)} but the experiment is "{name}"',
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
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        _check_reserved_keys(metadata, out)
        _check_annotation_size(metadata, out)
        _check_key_prefixes(
            [(("metadata", w), metadata.get(w)) for w in ("labels", "annotations")], out
        )
    namespace = lookup(data, "metadata", "namespace")
    if namespaces is not None and isinstance(namespace, str) and namespace not in namespaces:
        out.add(
            ("metadata", "namespace"),
            f"namespace {shown(namespace)} is not one Argo CD may deploy to",
            "allowed by tfgen.yaml argocd.namespaces: " + ", ".join(namespaces),
            key=False,
        )
    spec = data.get("spec")
    if isinstance(spec, dict):
        _check_roles(spec, out)
        _check_env(spec, out)
        _check_storage(spec, out)
        _check_tensorboard(spec, out)
        _check_tolerations(spec, out)
        _check_quantities(spec, out)
        _check_paths(spec, out)
        keyed: list[tuple[PointerParts, Any]] = []
        for name, role in _roles(spec):
            keyed.append((("spec", "roles", name, "nodeSelector"), role.get("nodeSelector")))
            tolerations = role.get("tolerations")
            for index, item in enumerate(tolerations if isinstance(tolerations, list) else []):
                where = ("spec", "roles", name, "tolerations", index, "key")
                keyed.append((where, lookup(item, "key")))
        _check_key_prefixes(keyed, out)
    return out.problems


def _others(items: Sequence[Checked], item: Checked, limit: int = 3) -> str:
    """The other files of a clash, at most `limit` of them named."""
    paths = [o.shown for o in items[: limit + 1] if o is not item][:limit]
    rest = len(items) - 1 - len(paths)
    return ", ".join(paths) + (f" and {rest} more" if rest else "")


def repo_problems(experiments: Sequence[Checked]) -> list[Problem]:
    """Rules across files: unique experiment names and unique derived PV names."""
    problems: list[Problem] = []
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
    for name, items in by_name.items():
        if len(items) < 2:
            continue
        for item in items:
            others = _others(items, item)
            out = Collector(item.locator)
            out.add(
                ("metadata", "name"),
                f"experiment name {shown(name)} is also used by {others}",
                "names must be unique in the repository: they name the Argo CD Application",
                key=False,
            )
            problems += out.problems
    for pv, items in by_pv.items():
        if len(items) < 2 or len({lookup(i.data, "metadata", "name") for i in items}) < 2:
            continue  # same name: already reported above
        for item in items:
            others = _others(items, item)
            out = Collector(item.locator)
            out.add(
                ("metadata", "name"),
                f"PersistentVolume name {shown(pv)} (<namespace>-<name>-data) is also derived by "
                f"{others}",
                "PersistentVolumes are cluster-wide; rename one experiment",
                key=False,
            )
            problems += out.problems
    return problems
