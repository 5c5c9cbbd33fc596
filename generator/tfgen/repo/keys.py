"""Every key of the cache (`repo.cache`), and the digests they are made of.

A key is a SHA-256 over everything that decides its entry's content, never a time or a name:
a changed input is a different key, so a stale entry cannot be hit. `CacheKeys` is the one
place every key is made, each from all of its inputs (tfgen's code and shipped schemas, the
chart, tfgen.yaml, helm's program, the Kubernetes version, ...).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__
from . import layout, resources


def digest(*parts: bytes | str) -> str:
    """SHA-256 hex of the parts, each length-prefixed so ("ab", "c") != ("a", "bc")."""
    return hashlib.sha256(_framed(parts)).hexdigest()


def _framed(parts: Iterable[bytes | str]) -> bytes:
    framed: list[bytes] = []
    for part in parts:
        # surrogateescape: a file name that is not UTF-8 is hashed as its bytes, not a crash
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        framed += (len(data).to_bytes(8, "big"), data)
    return b"".join(framed)


def content_hash(data: bytes) -> str:
    """A file's content hash, as snapshots and keys name files."""
    return hashlib.sha256(data).hexdigest()


def tree_digest(root: Path, ignore: Iterable[str] = (".git", "__pycache__"),
                follow_links: bool = False) -> str:
    """Digest of every file (relative path + bytes) under a folder, in a stable order; with
    `follow_links`, folders behind links too, as helm reads a chart (each real folder once)."""
    skip = set(ignore)
    parts: list[bytes | str] = []
    if not root.exists():
        return digest("absent")
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=follow_links):
        seen.add(os.path.realpath(dirpath))
        dirnames[:] = sorted(d for d in dirnames if d not in skip
                             and os.path.realpath(os.path.join(dirpath, d)) not in seen)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            parts.append(path.relative_to(root).as_posix())
            parts.append(path.read_bytes())
    return digest(*parts)


def path_digest(path: Path) -> str:
    """What helm reads at a path: a chart folder (folders behind links too), or a file."""
    if path.is_dir():
        return tree_digest(path, follow_links=True)
    try:
        return content_hash(path.read_bytes())
    except OSError:
        return digest("absent")


# The libraries tfgen's verdicts depend on beside its own code: the validators (and the `$ref`
# resolver of the Python one) and the YAML parsers. Every distribution installed beside them
# goes into the digest (another version of any of them empties the cache: rare, and safe).
# kubernetes-validate's schemas are in it by their own version file.
VERDICT_LIBRARIES = ("jsonschema_rs", "jsonschema", "referencing", "yaml", "yaml_rs")


@cache
def tool_digest() -> str:
    """tfgen itself: its version, its code, the schemas it ships, and the versions of the
    libraries its verdicts depend on. A new tfgen must not reuse an old one's verdicts."""
    package = Path(__file__).resolve().parents[1]
    kubernetes = resources.kubernetes_schemas_package()
    return digest(
        __version__,
        tree_digest(package),  # symlinked folders (the shipped schemas, chart) are not entered
        # the converted schemas, not the upstream CRDs they are made from
        tree_digest(resources.schema_dir(),
                    (".git", "__pycache__", Path(layout.UPSTREAM_SCHEMAS_DIR).name)),
        *installed_distributions(VERDICT_LIBRARIES),
        str(kubernetes), (kubernetes / "version.py").read_bytes(),  # its schemas' version
    )


def installed_distributions(modules: Iterable[str]) -> list[str]:
    """The distributions installed where `modules` are, by their metadata folders (which name
    each one's version: `jsonschema_rs-0.61.2.dist-info`), found without importing any of them
    (jsonschema_rs alone takes 30-60 ms to import, and names no version when it is)."""
    folders: set[str] = set()
    for module in modules:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            package = os.path.dirname(spec.origin)  # a package's folder, or the module's own
            folders.add(os.path.dirname(package) if spec.submodule_search_locations else package)
    found: list[str] = []
    for folder in sorted(folders):
        try:
            found += sorted(name for name in os.listdir(folder)
                            if name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
    return found


class CacheKeys:
    """Every key of the gate's cache, each a digest of everything its entry depends on.

    `tool` is `tool_digest()`; `cwd` is part of the keys of entries holding problems, because
    problems name files relative to the working directory.
    """

    def __init__(self, tool: str, cwd: str) -> None:
        self.tool = tool
        self.cwd = cwd
        self._prefixes: dict[tuple[bytes | str, ...], Any] = {}

    def _after(self, prefix: tuple[bytes | str, ...], *rest: bytes | str) -> str:
        """`digest(*prefix, *rest)`, the prefix hashed once: a run makes ten thousand keys of
        a kind, each starting with the same parts (tfgen, tfgen.yaml, the AppProjects...)."""
        start = self._prefixes.get(prefix)
        if start is None:
            start = self._prefixes[prefix] = hashlib.sha256(_framed(prefix))
        hasher = start.copy()
        hasher.update(_framed(rest))
        return str(hasher.hexdigest())

    @staticmethod
    def program_file(real_path: str, ident: str) -> str:
        """The entry of what a program file is (`gate.helm.identify`, `program_digest`): its
        real path and its status (`inputs.file_ident`), which any change to the file changes."""
        return digest("program-file", real_path, ident)

    def helm_shortcuts(self, helm: str) -> str:
        """Which of the batch renderer's shortcuts give exactly a helm's own per-experiment
        verdicts (`gate/helm/probe.py`): that helm (`HelmIdentity.key`) and tfgen (the probe)."""
        return digest("helm-shortcuts", self.tool, helm)

    @staticmethod
    def stat_table(root: str) -> str:
        """The status -> content hash table of a repository's input files (`repo.inputs`):
        content hashes, whatever tfgen reads them for."""
        return digest("stat-table", root)

    def run(self, tools: str, options: Mapping[str, Any], base_commit: str,
            inputs: str) -> str:
        """A whole `tfgen check` result: every input file (`inputs` digests them), tfgen, the
        programs it ran (helm's `HelmIdentity.key`, kubeconform's content hash), the options
        and the base revision."""
        return digest("check", self.tool, self.cwd, tools,
                      json.dumps(options, sort_keys=True), base_commit, inputs)

    def ledger(self, root: str, tools: str, options: Mapping[str, Any]) -> str:
        """The last all-clear check of the repository at `root` (`gate.ledger`): tfgen, the
        programs it ran (as for `run`) and the options; not the input files (the ledger
        holds their hashes)."""
        return digest("ledger", self.tool, self.cwd, root, tools,
                      json.dumps(options, sort_keys=True))

    @staticmethod
    def ledger_part(ledger: str, index: int) -> str:
        """One of the parts a ledger is kept in (`gate.ledger`)."""
        return digest("ledger-part", ledger, str(index))

    def spec(self, config: bytes, shown: str, content: str) -> str:
        """One spec file's verdict: its content hash, tfgen.yaml (its defaults and
        namespaces) and tfgen (the schema and the rules)."""
        return self._after(("spec", self.tool, self.cwd, config), shown, content)

    def in_sync(self, config: bytes, spec: str, *contents: str) -> str:
        """An experiment whose generated files are what `tfgen render` writes: the content
        hashes of its spec and of those files, the spec's path (the files name it),
        tfgen.yaml and tfgen."""
        return self._after(("in-sync", self.tool, self.cwd, config), spec, *contents)

    def argo_files(self, argocd: str) -> str:
        """The argo/ wiring files: tfgen.yaml's `argocd` block (as JSON) and tfgen (its
        templates)."""
        return digest("argo-files", self.tool, argocd)

    def resolution(self, root: Path, files: Sequence[tuple[str, bytes | str]]) -> str:
        """The Applications the ApplicationSet generates: what resolving them reads."""
        parts: list[bytes | str] = ["resolve", self.tool, str(root)]
        for rel, data in files:
            parts += [rel, data]
        return digest(*parts)

    def application(self, root: str, appset: str, rel: str, content: str) -> str:
        """One Application resolved from one generator file: the content hashes of that file
        and of the ApplicationSet, where the repository is (the Application names files by
        their paths) and tfgen."""
        return self._after(("application", self.tool, root, appset), rel, content)

    def render(self, helm: str, chart_digest: str, release: Sequence[str],
               values: Sequence[str]) -> str:
        """One experiment's rendered manifest: the helm that rendered it (`HelmIdentity.key`:
        its program's content hash), everything its `helm template` reads, and tfgen (which
        splits and normalises helm's output). `release`: its release name,
        namespace, Kubernetes version and API versions (joined by commas); `values`: the
        values files' content hashes, in order."""
        return self._after(("render", self.tool, helm, chart_digest), *release,
                           *values)

    def chart_defaults(self, helm: str, chart_digest: str) -> str:
        """Whether helm reads a chart's values.yaml as tfgen does: the chart and helm."""
        return digest("chart-defaults", self.tool, helm, chart_digest)

    def objects(self, render_key: str, namespace: str, project: str, *, kube_version: str,
                schema_check: bool, projects: str) -> str:
        """The verdict on one experiment's rendered objects: the objects (their render key)
        and what judges them (tfgen's schemas and rules, the Kubernetes version, the
        AppProjects in argo/)."""
        return self._after(("objects", self.tool, kube_version, str(schema_check), projects),
                           render_key, namespace, project)
