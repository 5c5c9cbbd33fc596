"""Finding and running the real `helm` binary.

The chart is rendered by the same program Argo CD's repo-server runs, never by a
re-implementation, and with the same command line everywhere (`template_command`). Lookup order:
`$TFGEN_HELM` (`$TFGEN_HELM3` for helm 3), the project-local `.tools/helm/v<major>/helm` of the
repository that `tfgen install-helm` installs (`helminstall.py`), then `helm` on PATH (helm 4
only).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EnvironmentProblem, HelmError
from ..repo import chart as chart_facts
from ..repo import layout

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
