"""What the Kubernetes API server (or a node) refuses in a spec beyond each field's grammar in
the schema: toleration rules, quantities no node has, the 256 KiB annotation total, label-key
prefixes over 253 characters, paths with `.`, `..` or `//` segments, and system directories as
mount paths. Each refusal is a problem at the spec's field, at PR time rather than after merge.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from ...repo import naming
from ..experiment.checked import Collector, lookup, roles
from ..schema.messages import shown
from ..yaml.document import PointerParts

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


@functools.lru_cache(maxsize=4096)  # specs repeat a few sizes ("4", "8Gi") thousands of times
def quantity(text: str) -> Decimal | None:
    """A quantity the schema's pattern allowed ("500m", "8Gi", "0.5") as a number; None if not
    one of those forms (the schema reports it)."""
    match = _QUANTITY.match(text)
    if not match:
        return None
    return Decimal(match.group(1)) * _SUFFIX[match.group(2) or ""]


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


def _check_tolerations(spec: dict[str, Any], out: Collector) -> None:
    """What the API server refuses in a toleration beyond each field's own grammar."""
    for name, role in roles(spec):
        tolerations = role.get("tolerations")
        if not isinstance(tolerations, list):
            continue
        for index, item in enumerate(tolerations):
            if isinstance(item, dict):
                _check_toleration(("spec", "roles", name, "tolerations", index), item, out)


def _check_toleration(parts: PointerParts, item: dict[str, Any], out: Collector) -> None:
    """One toleration: its operator, value, key and effect must agree."""
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


# The sizes a pod's container asks for: (key, at most, that limit in words).
_SIZE_LIMITS = (("cpu", MAX_CPU_CORES, f"{MAX_CPU_CORES} cores"),
                ("memory", MAX_MEMORY_BYTES, "16Ti"))


def _check_quantities(spec: dict[str, Any], out: Collector) -> None:
    places: list[tuple[PointerParts, Any]] = [
        (("spec", "roles", name), role) for name, role in roles(spec)
    ]
    tensorboard = spec.get("tensorboard")
    if isinstance(tensorboard, dict):
        places.append((("spec", "tensorboard"), tensorboard))
    for parts, holder in places:
        _check_sizes(parts, holder, out)
    capacity = lookup(spec, "storage", "nas", "capacity")
    amount = quantity(capacity) if isinstance(capacity, str) else None
    if amount is not None and not 0 < amount <= MAX_CAPACITY_BYTES:
        out.add(
            ("spec", "storage", "nas", "capacity"),
            f"{shown(capacity)} is not a usable volume size: more than 0 and at most 1Ei",
            "e.g. 100Gi",
            key=False,
        )


def _check_sizes(parts: PointerParts, holder: dict[str, Any], out: Collector) -> None:
    """The CPU and memory one container asks for: more than any node has is a typo, and so is
    memory below 1Mi."""
    for key, limit, said in _SIZE_LIMITS:
        value = holder.get(key)
        if not isinstance(value, str):
            continue
        amount = quantity(value)
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


def path_problem(path: str) -> str | None:
    """What keeps an absolute path from being the one it seems to be."""
    if "/." not in path and "//" not in path:
        return None  # no segment of dots and no empty one: most paths, at once
    inner = path.rstrip("/").split("/")[1:] if path not in ("", "/") else []
    dots = next((part for part in inner if part in (".", "..")), None)
    if dots:
        return f'contains a "{dots}" segment (a path must name its directory directly)'
    if "" in inner:
        return 'contains "//" (an empty path segment)'
    return None


def plain_absolute(path: Any) -> bool:
    """An absolute path that names its directory directly, as rules on what a path points to
    need it: the schema reports a relative path, and `_check_paths` a `path_problem`."""
    return isinstance(path, str) and path.startswith("/") and not path_problem(path)


# The paths a spec writes that must name their directory directly.
_PATHS = (
    ("spec", "storage", "mountPath"),
    ("spec", "storage", "nas", "path"),
    ("spec", "tensorboard", "logDir"),
    ("spec", "tensorboard", "ingress", "pathPrefix"),
    ("spec", "workingDir"),
)


def _check_paths(spec: dict[str, Any], out: Collector) -> None:
    for parts in _PATHS:
        value = lookup(spec, *parts[1:])
        if not isinstance(value, str) or not value.startswith("/"):
            continue  # the schema reports relative paths
        problem = path_problem(value)
        if problem:
            normal = shown(posixpath.normpath(value))
            out.add(parts, f"{shown(value)} {problem}", f"write {normal}", key=False)


def _system_directory(target: str) -> str | None:
    """How a mount target that is a system directory is said to be one ("" when it is one
    itself), None when it is none."""
    below = next(
        (d for d in SYSTEM_DIRECTORIES_BELOW if target == d or target.startswith(d + "/")),
        None,
    )
    if below:
        return f" ({below} and everything below it)"
    if target in SYSTEM_DIRECTORIES:
        return ""
    return None


def _check_mount_path(spec: dict[str, Any], out: Collector) -> None:
    """A volume mounted over a system directory hides what the containers need there."""
    mount = lookup(spec, "storage", "mountPath")
    if not plain_absolute(mount):
        return
    said = _system_directory(posixpath.normpath(mount))
    if said is not None:
        out.add(
            ("spec", "storage", "mountPath"),
            f"{shown(mount)} is a system directory"
            + said
            + ": the volume would hide what the containers need there",
            "mount the volume at a directory of its own, e.g. /training or /data",
            key=False,
        )


def api_problems(data: dict[str, Any], out: Collector) -> None:
    """Every check of this module on one experiment's data."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        _check_annotation_size(metadata, out)
        _check_key_prefixes(
            [(("metadata", w), metadata.get(w)) for w in ("labels", "annotations")], out
        )
    spec = data.get("spec")
    if not isinstance(spec, dict):
        return
    _check_tolerations(spec, out)
    _check_quantities(spec, out)
    _check_paths(spec, out)
    _check_mount_path(spec, out)
    keyed: list[tuple[PointerParts, Any]] = []
    for name, role in roles(spec):
        keyed.append((("spec", "roles", name, "nodeSelector"), role.get("nodeSelector")))
        tolerations = role.get("tolerations")
        for index, item in enumerate(tolerations if isinstance(tolerations, list) else []):
            where = ("spec", "roles", name, "tolerations", index, "key")
            keyed.append((where, lookup(item, "key")))
    _check_key_prefixes(keyed, out)
