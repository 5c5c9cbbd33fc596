"""Build the Go tools of the test suite and the docs into a project-local folder.

Development and test tooling only (a user of tfgen needs Python and helm, `make setup`): `make
dev` runs this. Two kinds of tool, both built with the machine's Go from the Go module proxy:

- pinned upstream tools, `go install`ed at a pinned version whose module checksum is pinned
  here too (and checked by Go against its checksum database): helm-docs writes the chart
  README's values table, kubeconform is the second validator `tfgen check --validator
  kubeconform` runs (the suite runs it on every rendered object);
- the referees in tests/go/<name>/, small programs that run upstream Go code (the Pod Security
  admission library, the training operator, Go's text/template) for the differential tests.
  They are one Go module (tests/go/go.mod and go.sum pin every dependency), built by one `go
  build`: the Kubernetes libraries they share are compiled once, the packages in parallel.

Usage: python scripts/install_go_tools.py [DEST]   (default: .tools/go)
Result: DEST/<tool> for each. A pinned tool already reporting its version is kept; the referees
are rebuilt by `go build` (Go's build cache makes unchanged ones take a moment). Every message
goes to stderr: a line per step saying what is built and how long it took, then the packages as
Go compiles them (`-v`), so a first build (minutes from an empty module cache) is never silent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name -> (the package `go install` builds, its module, the module's version, its checksum)
PINNED = {
    "helm-docs": ("github.com/norwoodj/helm-docs/cmd/helm-docs", "github.com/norwoodj/helm-docs",
                  "v1.14.2", "h1:Ew3bCq1hZqMnnTopkk66Uy2mGwu/jAclAx+3JAVp1To="),
    "kubeconform": ("github.com/yannh/kubeconform/cmd/kubeconform",
                    "github.com/yannh/kubeconform", "v0.7.0",
                    "h1:ZFfniR8VChrWQxaxTUGnNrxw8RIDkjVBrjdhXSamwjw="),
}
REFEREES = ROOT / "tests" / "go"


def say(message: str) -> None:
    print(f"install_go_tools: {message}", file=sys.stderr, flush=True)


def fail(message: str) -> None:
    sys.exit(f"install_go_tools: {message}")


def module_version(go: str, binary: Path, module: str) -> str | None:
    """The version of `module` that Go recorded in `binary` (every Go binary names the
    version of its main module), None when there is no such binary."""
    if not binary.exists():
        return None
    result = subprocess.run([go, "version", "-m", str(binary)], capture_output=True,
                            text=True, check=False)
    for line in result.stdout.splitlines():
        fields = line.split()
        if fields[:2] == ["mod", module]:
            return fields[2]
    return None


def run_go(go: str, args: list[str], cwd: Path, env: dict[str, str], what: str) -> None:
    started = time.monotonic()
    result = subprocess.run([go, *args], cwd=cwd, env=env, stdout=sys.stderr, check=False)
    if result.returncode != 0:
        fail(f"`go {' '.join(args)}` failed for {what} (exit {result.returncode}; Go's message "
             "is above)")
    say(f"{what}: done in {time.monotonic() - started:.0f} s")


def install_pinned(go: str, dest: Path, name: str, env: dict[str, str]) -> None:
    package, module, version, checksum = PINNED[name]
    binary = dest / name
    if module_version(go, binary, module) == version:
        say(f"{name} {version} already at {binary}")
        return
    say(f"{name} {version}: fetching {module}@{version} ...")
    result = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"],
                            capture_output=True, text=True, env=env, cwd=dest, check=False)
    info = json.loads(result.stdout or "{}")
    if result.returncode != 0 or info.get("Sum") != checksum:
        fail(f"{module}@{version}: {info.get('Error') or result.stderr.strip() or 'checksum '}"
             f"{info.get('Sum', '')} (pinned {checksum})")
    say(f"{name} {version}: building with go install ...")
    run_go(go, ["install", "-v", f"{package}@{version}"], dest, {**env, "GOBIN": str(dest)},
           name)
    found = module_version(go, binary, module)
    if found != version:
        fail(f"{binary} reports {module} {found}, expected {version}")


def build_referees(go: str, dest: Path, env: dict[str, str]) -> None:
    names = sorted(p.parent.name for p in REFEREES.glob("*/main.go"))
    say(f"referees {', '.join(names)}: building tests/go (its go.mod and go.sum pin what they "
        "run) ...")
    # -mod=readonly: a go.mod or go.sum that does not pin everything fails, never changes
    run_go(go, ["build", "-v", "-mod=readonly", "-trimpath", "-o", f"{dest}{os.sep}",
                *(f"./{name}" for name in names)], REFEREES, env, "referees")


def main() -> None:
    dest = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / ".tools" / "go").resolve()
    go = shutil.which("go")
    if go is None:
        fail("the test suite's Go tools are built with Go, and no `go` is on PATH; install "
             "Go (1.26 or newer: tests/go/go.mod says so) and run `make go-tools` again")
    dest.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    for name in PINNED:
        install_pinned(go, dest, name, env)
    build_referees(go, dest, env)


if __name__ == "__main__":
    main()
