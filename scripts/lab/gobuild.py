"""Build the lab's Go parts into .tools/lab/bin/, each from its pinned module of ours.

One `go build` per part (the four Kubernetes commands share one, so they share the compile),
`-mod=readonly` so that a go.mod or go.sum that does not pin everything fails instead of
changing, `-v` so that Go's package lines show progress the whole time (a cold build compiles
for many minutes). A part whose binaries already report its pinned version is kept, as
scripts/install_go_tools.py keeps its tools.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from .host import LabError, say
from .versions import PARTS, GoPart

GO_DIR = Path(__file__).resolve().parent / "go"


def pinned_in_gomod(part: GoPart) -> str | None:
    """The version of the part's upstream module that its go.mod requires."""
    text = (GO_DIR / part.name / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(part.module)}\s+(v\S+)", text, re.M)
    return found.group(1) if found else None


def built_version(go: str, binary: Path, module: str) -> str | None:
    """The version of `module` Go recorded in `binary` (None when there is no such binary)."""
    if not binary.exists():
        return None
    shown = subprocess.run([go, "version", "-m", str(binary)], capture_output=True, text=True,
                           check=False)
    for line in shown.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0] in ("dep", "mod") and fields[1] == module:
            return fields[2]
    return None


def is_built(go: str, bindir: Path, part: GoPart) -> bool:
    """Every binary of the part is there and reports the pinned version."""
    return all(built_version(go, bindir / b, part.module) == part.version for b in part.binaries)


def build_args(part: GoPart, bindir: Path) -> list[str]:
    """The `go build` arguments: a single package is written to its binary's name (Go would
    name it after its folder, e.g. `training-operator.v1` or `cmd`), several to the folder."""
    out = str(bindir / part.binaries[0]) if len(part.packages) == 1 else f"{bindir}{os.sep}"
    args = ["build", "-v", "-mod=readonly", "-trimpath", "-buildvcs=false", "-o", out]
    if part.ldflags:
        args += ["-ldflags", part.ldflags]
    return [*args, *part.packages]


def build_part(go: str, bindir: Path, part: GoPart, env: dict[str, str]) -> None:
    """Build one part unless it is already built at its pinned version."""
    if pinned_in_gomod(part) != part.version:
        raise LabError(f"scripts/lab/go/{part.name}/go.mod requires {part.module} "
                       f"{pinned_in_gomod(part)}, versions.py pins {part.version}: make them agree")
    if is_built(go, bindir, part):
        say(f"{part.name} {part.version}: already built in {bindir}")
        return
    say(f"{part.name} {part.version}: go build {' '.join(part.packages)} (Go's package lines "
        "follow; a cold build takes minutes) ...")
    started = time.monotonic()
    # nice: the lab's build must not starve whatever else the machine runs (a test suite)
    done = subprocess.run(["nice", "-n", "10", go, *build_args(part, bindir)],
                          cwd=GO_DIR / part.name, env=env, stdout=sys.stderr, check=False)
    if done.returncode != 0:
        raise LabError(f"go build failed for {part.name} {part.version} (exit "
                       f"{done.returncode}; Go's message is above)")
    say(f"{part.name}: built in {time.monotonic() - started:.0f} s")


def build_all(go: str, bindir: Path, only: list[str] | None = None) -> None:
    """Build every part (or those named in `only`)."""
    bindir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}
    for part in PARTS:
        if only and part.name not in only:
            continue
        build_part(go, bindir, part, env)


def module_dir(go: str, part: GoPart) -> Path:
    """Where Go's module cache holds the part's pinned upstream module (downloaded if not)."""
    done = subprocess.run([go, "mod", "download", "-json", f"{part.module}@{part.version}"],
                          cwd=GO_DIR / part.name, capture_output=True, text=True, check=False)
    found = re.search(r'"Dir":\s*"([^"]+)"', done.stdout)
    if done.returncode != 0 or not found:
        raise LabError(f"cannot download {part.module}@{part.version}: "
                       f"{done.stdout.strip() or done.stderr.strip()}")
    return Path(found.group(1))
