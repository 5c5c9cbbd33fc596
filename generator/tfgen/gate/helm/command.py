"""Finding and running the real `helm` binary.

The chart is rendered by the same program Argo CD's repo-server runs, never by a
re-implementation, and with the same command line everywhere (`template_command`). Lookup order:
`$TFGEN_HELM` (`$TFGEN_HELM3` for helm 3), the project-local `.tools/helm/v<major>/helm` of the
repository that `tfgen install-helm` installs (`install.py`), then `helm` on PATH (helm 4
only).

What tfgen remembers of a helm's renders is keyed by the helm's identity (`identify`): the
content hash of its program file, so that only the very same build reuses them, whichever path
it is found at. A file that is not the helm build it reports (a wrapper script, a version
manager's shim, which may run another helm tomorrow) has no such identity.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import EnvironmentProblem, HelmError
from ...repo import chart as chart_facts
from ...repo import layout
from ...repo.cache import Cache
from ...repo.inputs import file_ident, settled
from ...repo.keys import CacheKeys

TOOLS_DIR = Path(".tools") / "helm"
INSTALL_HINT = ("run `tfgen install-helm` to install the pinned helm into .tools/ (or set "
                "$TFGEN_HELM)")


def local_helm(base: Path, major: int) -> Path:
    """Where the repository `base` keeps its own helm of a major version (4 or 3)."""
    return base / TOOLS_DIR / f"v{major}" / "helm"


def find_helm(major: int = 4, root: Path | None = None) -> str:
    """Path of a helm binary of the given major version (4 or 3); `root` is the repository
    whose `.tools/` may hold one (default: the repository around the working directory)."""
    env_var = "TFGEN_HELM" if major == 4 else "TFGEN_HELM3"
    if os.environ.get(env_var):
        return _runnable(os.environ[env_var], f"${env_var}")
    local = local_helm(root or layout.find_root() or Path.cwd(), major)
    if local.exists() or local.is_symlink():
        return _runnable(str(local), str(local))
    on_path = shutil.which("helm")
    if on_path and major == 4:
        return on_path
    raise EnvironmentProblem(f"helm {major}.x not found: {INSTALL_HINT}")


def _runnable(helm: str, named_by: str) -> str:
    """`helm` itself when it is a program we can start, else EnvironmentProblem saying what it
    is instead. Checked here, once, so that no later subprocess call meets a folder or a text
    file. A bare name (no slash) is looked up on PATH, as a shell would."""
    path = shutil.which(helm) if os.sep not in helm else helm
    if path is None:
        raise EnvironmentProblem(f"{named_by}={helm}: no such program on PATH; {INSTALL_HINT}")
    if not os.path.exists(path):
        raise EnvironmentProblem(f"{named_by}: {path} does not exist; {INSTALL_HINT}")
    if os.path.isdir(path):
        raise EnvironmentProblem(f"{named_by}: {path} is a folder, not the helm program; "
                                 f"{INSTALL_HINT}")
    if not os.path.isfile(path):
        raise EnvironmentProblem(f"{named_by}: {path} is not a regular file; {INSTALL_HINT}")
    if not os.access(path, os.X_OK):
        raise EnvironmentProblem(f"{named_by}: {path} is not executable (chmod +x it, or "
                                 f"point it at the helm binary); {INSTALL_HINT}")
    return path


@dataclass(frozen=True)
class RenderJob:
    """One `helm template` as the ApplicationSet runs it for one Application."""

    name: str  # Application name = release name = experiment name
    namespace: str
    chart: Path
    values_files: tuple[Path, ...] = ()
    kube_version: str | None = None
    api_versions: tuple[str, ...] = chart_facts.API_VERSIONS


def template_command(helm: str, job: RenderJob, *, skip_schema_validation: bool = False
                     ) -> list[str]:
    """`helm template` as Argo CD runs it for one Application: release, namespace, value files,
    the cluster's Kubernetes version and APIs."""
    cmd = [helm, "template", job.name, str(job.chart), "--namespace", job.namespace]
    for values in job.values_files:
        cmd += ["--values", str(values)]
    if skip_schema_validation:
        cmd.append("--skip-schema-validation")
    if job.kube_version:
        cmd += ["--kube-version", job.kube_version]
    for api in job.api_versions:
        cmd += ["--api-versions", api]
    return cmd


# helm is a Go program. At Go's default (GOGC=100) its garbage collector takes a quarter of a
# batch's CPU: a batch of 150 experiments took 1.64 s of user CPU, and 1.19 s when helm collects
# only as its heap nears 150 MiB (its peak RSS then ~180 MB instead of ~120 MB). tfgen's helm
# processes live a second or two, so they run so. A heap that needs more than the limit is
# collected as often as it must (Go spends at most half the CPU on it), never refused. (A helm
# built with Go before 1.19 ignores GOMEMLIMIT and would not collect at all: that batch peaked
# at ~310 MB so; helm 4 is built with a later Go.) A GOGC or GOMEMLIMIT of the user's own is
# left as it is.
GC_SETTINGS = {"GOGC": "off", "GOMEMLIMIT": "150MiB"}


def environment() -> dict[str, str]:
    """The environment tfgen runs helm in: its own, with GC_SETTINGS unless it sets either."""
    env = dict(os.environ)
    if not any(name in env for name in GC_SETTINGS):
        env.update(GC_SETTINGS)
    return env


def run(cmd: Sequence[str], cwd: Path | None = None) -> str:
    """Run a helm command; its stdout, HelmError with helm's message when it fails."""
    try:
        result = subprocess.run(list(cmd), capture_output=True, text=True, check=False, cwd=cwd,
                                env=environment())
    except OSError as exc:
        raise EnvironmentProblem(f"cannot run {cmd[0]}: {exc.strerror}; {INSTALL_HINT}") from exc
    if result.returncode != 0:
        raise HelmError(result.stderr.strip() or f"helm template failed ({result.returncode})")
    return result.stdout


def template(job: RenderJob, *, helm: str | None = None, cwd: Path | None = None) -> str:
    """Render one release; returns the rendered multi-document YAML."""
    return run(template_command(helm or find_helm(), job), cwd)


@dataclass(frozen=True)
class HelmIdentity:
    """Which helm renders: where it was found, the release and build it reports, and the
    content hash of its program file when that file holds the build it reports (`pinned`)."""

    path: str
    version: str  # "v4.2.3+g43e8b7f", as `helm version --short` says ("": none said)
    digest: str = ""  # the program file's content hash; "" when it does not pin the build

    @property
    def pinned(self) -> bool:
        """Whether the file found is the helm build itself, so that its content hash names
        what renders (a wrapper's or a shim's does not: it may run another helm tomorrow)."""
        return bool(self.digest)

    @property
    def key(self) -> str:
        """What every cache key holds of helm: the build, by its content hash."""
        return f"{self.version} {self.digest}"


# `helm version` fields printed by helm 3 and 4 alike: the release, and the commit it was built
# from, which a helm build carries in its program file as text.
_VERSION_TEMPLATE = "{{.Version}} {{.GitCommit}}"


def identify(helm: str, cache: Cache) -> HelmIdentity:
    """The identity of the helm at `helm`, remembered by its program file's status (path,
    size, times, inode): hashing a 60 MB binary on every run would cost a tenth of a second."""
    real = os.path.realpath(helm)
    try:
        status = os.stat(real)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read {helm}: {exc.strerror}; {INSTALL_HINT}") from exc
    entry = CacheKeys.program_file(real, file_ident(status))
    known = cache.get_json("helm-file", entry)
    if isinstance(known, dict) and set(known) == {"version", "digest"}:
        return HelmIdentity(helm, str(known["version"]), str(known["digest"]))
    taken = time.time_ns()
    found = _look_at(helm, real)
    if settled(status, taken):  # a file being written now is looked at again next time
        cache.put_json("helm-file", entry, {"version": found.version, "digest": found.digest})
        cache.flush()
    return found


def program_digest(program: str, cache: Cache) -> str:
    """The content hash of another program the gate runs (kubeconform), remembered by its
    file's status as helm's identity is."""
    real = os.path.realpath(program)
    try:
        status = os.stat(real)
    except OSError:
        return ""  # running it says what is wrong
    entry = CacheKeys.program_file(real, file_ident(status))
    known = cache.get("program-file", entry)
    if known is None:
        taken = time.time_ns()
        known, _ = _content(real, b"")
        if settled(status, taken):
            cache.put("program-file", entry, known)
    return known


def _look_at(helm: str, real: str) -> HelmIdentity:
    """Ask helm which build it is, and hash its program file: pinned when the file holds the
    commit helm reports (a helm build does, as text; a script or a shim that runs one does
    not, and neither does a build that reports no commit)."""
    try:
        answer = subprocess.run([helm, "version", "--template", _VERSION_TEMPLATE],
                                capture_output=True, text=True, check=False)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot run {helm}: {exc.strerror}; {INSTALL_HINT}") from exc
    release, _, commit = answer.stdout.strip().partition(" ")
    if answer.returncode != 0 or not release.startswith("v"):
        return HelmIdentity(helm, "")  # no helm build it names: its renders say the rest
    version = f"{release}+g{commit[:7]}" if commit else release
    digest, holds = _content(real, commit.encode())
    return HelmIdentity(helm, version, digest if len(commit) == 40 and holds else "")


def _content(path: str, text: bytes) -> tuple[str, bool]:
    """A file's content hash, and whether it holds `text`: read a megabyte at a time (a
    helm binary is 60 MB, which the check need not hold)."""
    hasher, holds, tail = hashlib.sha256(), False, b""
    with open(path, "rb") as program:
        while chunk := program.read(1 << 20):
            hasher.update(chunk)
            holds = holds or bool(text) and text in tail + chunk
            tail = chunk[-len(text):] if text else b""
    return hasher.hexdigest(), holds
