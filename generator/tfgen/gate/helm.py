"""Finding and running the real `helm` binary.

The chart is rendered by the same program Argo CD's repo-server runs, never by a re-implementation.
Lookup order: `$TFGEN_HELM`, the project-local `.tools/helm/v4/helm` that `make setup` installs,
then `helm` on PATH. Helm 3 (for the both-versions tests) comes from `$TFGEN_HELM3` or
`.tools/helm/v3/helm`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import EnvironmentProblem, HelmError

PROJECT_ROOT = Path(__file__).resolve().parents[3]
INSTALL_HINT = "run `make setup` (or `python scripts/install_helm.py`) to install helm into .tools/"


def find_helm(major: int = 4, root: Path = PROJECT_ROOT) -> str:
    """Path of a helm binary of the given major version (4 or 3)."""
    env_var = "TFGEN_HELM" if major == 4 else "TFGEN_HELM3"
    if os.environ.get(env_var):
        return os.environ[env_var]
    local = root / ".tools" / "helm" / f"v{major}" / "helm"
    if local.exists():
        return str(local)
    on_path = shutil.which("helm")
    if on_path and major == 4:
        return on_path
    raise EnvironmentProblem(f"helm {major}.x not found: {INSTALL_HINT}")


def template(
    chart: Path,
    release: str,
    namespace: str,
    values_files: Sequence[Path] = (),
    *,
    kube_version: str | None = None,
    api_versions: Sequence[str] = ("kubeflow.org/v1",),
    helm: str | None = None,
    cwd: Path | None = None,
) -> str:
    """`helm template` exactly as Argo CD runs it; returns the rendered multi-document YAML."""
    cmd = [helm or find_helm(), "template", release, str(chart), "--namespace", namespace]
    for values in values_files:
        cmd += ["--values", str(values)]
    if kube_version:
        cmd += ["--kube-version", kube_version]
    for api in api_versions:
        cmd += ["--api-versions", api]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
    except FileNotFoundError as exc:
        raise EnvironmentProblem(f"cannot run {cmd[0]}: {exc.strerror}; {INSTALL_HINT}") from exc
    if result.returncode != 0:
        raise HelmError(result.stderr.strip() or f"helm template failed ({result.returncode})")
    return result.stdout
