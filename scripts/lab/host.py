"""What the lab needs from the machine: Go, and a few Debian packages.

A missing piece is said in one line naming what to install. The Debian packages are installed
here (`apt-get install -y --no-install-recommends`) when one is missing and we run as root, as
the project's set-up installs everything else it needs; otherwise the line says which package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .versions import DEBIAN


class LabError(Exception):
    """A failure the lab explains in one line (what is missing, what failed and where)."""


def say(message: str) -> None:
    """Progress goes to stderr, so that a long build is never silent and stdout stays clean."""
    print(f"lab: {message}", file=sys.stderr, flush=True)


def need_go() -> str:
    """The `go` command, or a one-line failure."""
    go = shutil.which("go")
    if go is None:
        raise LabError("the lab's tools are built with Go and no `go` is on PATH: install Go "
                       "1.26 or newer (the lab's Go modules ask for it)")
    return go


def missing_debian() -> list[str]:
    """The Debian packages whose command is not on PATH."""
    return sorted({pkg for cmd, pkg in DEBIAN.items() if shutil.which(cmd) is None})


def ensure_debian() -> None:
    """Install the missing Debian packages when we may (root, apt-get), else say which."""
    missing = missing_debian()
    if not missing:
        return
    hint = f"apt-get install -y --no-install-recommends {' '.join(missing)}"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise LabError(f"the lab needs the Debian package(s) {', '.join(missing)}: run `{hint}` "
                       "as root")
    say(f"installing Debian package(s) {', '.join(missing)} ...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # A fresh machine has no package lists yet: `install` alone finds nothing there.
    for args in (["apt-get", "update"], hint.split()):
        done = subprocess.run(args, stdout=sys.stderr, env=env, check=False)
        if done.returncode != 0:
            raise LabError(f"`{' '.join(args)}` failed (exit {done.returncode}, apt's message "
                           "is above)")
    still = missing_debian()
    if still:
        raise LabError(f"{', '.join(still)} still missing after apt-get install")
