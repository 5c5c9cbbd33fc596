"""The repository configuration, `tfgen.yaml` at the repository root.

The repository root is the nearest directory, from the given paths (or the working directory)
upwards, that holds a `tfgen.yaml`. The file is loaded strictly, validated against
`schemas/repo-config.schema.json` and completed with the schema's defaults; without a file the
built-in defaults apply. Its `defaults` block is deep-merged under every experiment spec before
validation (`merge_defaults`: the spec wins, mappings merge, lists are replaced whole).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..problems import Problem
from .loader import Document, LoadError, load_file

CONFIG_NAME = "tfgen.yaml"
SCHEMA_DIR = Path(__file__).resolve().parents[3] / "schemas"


@dataclass
class RepoConfig:
    """tfgen.yaml with every default filled in.

    `root` is the repository root (where tfgen.yaml is, else the starting directory), `path`
    the config file (None when the built-in defaults are used), `data` the complete config as
    a dict (keys as in the contract: kubernetesVersion, clusterDomain, argocd, defaults).
    """

    root: Path
    path: Path | None
    data: dict[str, Any]
    document: Document | None = field(default=None, repr=False)

    @property
    def kubernetes_version(self) -> str:
        return str(self.data["kubernetesVersion"])

    @property
    def cluster_domain(self) -> str:
        return str(self.data["clusterDomain"])

    @property
    def argocd(self) -> dict[str, Any]:
        return dict(self.data["argocd"])

    @property
    def namespaces(self) -> list[str]:
        return list(self.data["argocd"]["namespaces"])

    @property
    def defaults(self) -> dict[str, Any]:
        return dict(self.data["defaults"])

    @property
    def experiments_dir(self) -> Path:
        return self.root / "experiments"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """One of the project's JSON schemas from schemas/, parsed once."""
    with open(SCHEMA_DIR / name, encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


def find_root(paths: Iterable[Path | str] = (), cwd: Path | None = None) -> Path | None:
    """The nearest ancestor (of the first path, else of cwd) that holds tfgen.yaml, or None."""
    starts = [Path(p) for p in paths] or [cwd or Path.cwd()]
    for start in starts:
        here = start.resolve()
        if not here.is_dir():
            here = here.parent
        for candidate in (here, *here.parents):
            if (candidate / CONFIG_NAME).is_file():
                return candidate
    return None


# Keys that are alternatives: when a spec sets one of them, a default for another is dropped
# (a repo-wide NAS default must not collide with a spec's existingClaim).
EXCLUSIVE: dict[tuple[str, ...], tuple[str, ...]] = {
    ("spec", "storage"): ("nas", "existingClaim"),
    ("spec", "roles"): ("master", "chief"),
}


def copy_data(value: Any) -> Any:
    """A deep copy of loaded YAML data (mappings, lists, scalars); much cheaper than
    `copy.deepcopy`, which it falls back to for anything else."""
    if isinstance(value, dict):
        return {key: copy_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_data(item) for item in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    return copy.deepcopy(value)


def merge_defaults(
    defaults: Mapping[str, Any],
    spec: Mapping[str, Any],
    _at: tuple[str, ...] = (),
    *,
    own_spec: bool = False,
) -> dict[str, Any]:
    """Deep merge: `spec` wins; mappings merge key by key; lists and scalars are replaced.

    Keys keep the spec's order, defaults-only keys follow. See EXCLUSIVE for alternatives.
    The result shares nothing with `defaults`, nor with `spec` unless `own_spec`: then the
    spec's lists and mappings are taken over as they are (for a caller that just loaded the
    spec and hands it over).
    """
    out: dict[str, Any] = {}
    for key, value in spec.items():
        base = defaults.get(key)
        if isinstance(value, Mapping) and isinstance(base, Mapping):
            out[key] = merge_defaults(base, value, (*_at, key), own_spec=own_spec)
        elif own_spec or not isinstance(value, (dict, list)):
            out[key] = value
        else:
            out[key] = copy_data(value)
    skip: set[str] = set()
    group = EXCLUSIVE.get(_at, ())
    if any(k in spec for k in group):
        skip = set(group)
    for key, value in defaults.items():
        if key not in out and key not in skip:
            out[key] = copy_data(value)
    return out


def config_problems(document: Document) -> list[Problem]:
    """Schema problems of a loaded tfgen.yaml, located in that file."""
    from .schema import schema_problems  # schema imports config for its schema files

    return schema_problems(document, document.data, "repo-config.schema.json")


def load_config(paths: Iterable[Path | str] = (), cwd: Path | None = None) -> RepoConfig:
    """Find, load, validate and complete tfgen.yaml; InputError listing every problem if invalid."""
    from .schema import apply_defaults

    root = find_root(paths, cwd)
    if root is None:
        return RepoConfig(
            root=(cwd or Path.cwd()).resolve(),
            path=None,
            data=apply_defaults(
                {"apiVersion": "tfgen.io/v1", "kind": "RepoConfig"}, "repo-config.schema.json"
            ),
        )
    path = root / CONFIG_NAME
    try:
        document = load_file(path, display=_display(path))
    except LoadError as exc:
        raise InputError(exc.message) from None
    problems = config_problems(document)
    if problems:
        raise InputError("invalid repository config:\n" + "\n".join(p.text() for p in problems))
    return RepoConfig(
        root=root,
        path=path,
        data=apply_defaults(document.data, "repo-config.schema.json"),
        document=document,
    )


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
