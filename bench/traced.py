"""`python bench/traced.py OUT.json ARGS...`: tfgen ARGS, run in this process, and what it
cost apart: tfgen's own CPU (this process, every thread), each helm process's CPU (from
wait4), peak RSS (its own high-water mark, from /proc) and experiments rendered (its
umbrella chart's aliases; 0 for a plain `helm template`), the disk's reads and writes, and
the wall time; written to OUT.json at exit.

The benchmark runs every measured tfgen command through this launcher, so that the cold
check's CPU is split by measuring, not by subtracting another run's. It replaces the one
function through which tfgen starts helm for a render (`gate/helm/command.run`) with one that
does the same (the same command, environment and errors) and also records the process. Other
children (git, kubeconform) count in `children_cpu` only. A measurement tool: nothing in
tfgen knows of it.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tfgen.errors import EnvironmentProblem, HelmError
from tfgen.gate.helm import command

started = time.perf_counter()
helms: list[dict[str, Any]] = []


def _aliases(cmd: Sequence[str]) -> int:
    """The experiments a helm command renders: its umbrella chart's aliases, else 0."""
    chart = Path(cmd[3]) / "Chart.yaml" if len(cmd) > 3 else None
    if chart is None or not chart.is_file():
        return 0
    try:
        return len(json.loads(chart.read_text()).get("dependencies", []))
    except ValueError:
        return 0  # the user's own chart (YAML): a plain helm template


def _watch_peak(pid: int, readers: list[threading.Thread], peak: list[int]) -> None:
    """helm's own peak RSS (kB): the kernel's high-water mark of the process, read until its
    output ends. (`wait4` gives the larger of it and what tfgen held when it forked helm.)"""
    while any(reader.is_alive() for reader in readers):
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
        except (OSError, ValueError):
            return  # not Linux, or gone
        time.sleep(0.02)


def run(cmd: Sequence[str], cwd: Path | None = None) -> str:
    """`command.run`, recording the process's wall time, CPU and peak RSS."""
    size, start = _aliases(cmd), time.perf_counter()
    try:
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=cwd, env=command.environment())
    except OSError as exc:
        raise EnvironmentProblem(f"cannot run {cmd[0]}: {exc.strerror}") from exc
    out: dict[str, bytes] = {}

    def drain(name: str, pipe: Any) -> None:
        out[name] = pipe.read()

    peak = [0]
    readers = [threading.Thread(target=drain, args=(name, pipe))
               for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    readers.append(threading.Thread(target=_watch_peak, args=(proc.pid, readers[:2], peak)))
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    helms.append({"start": start - started, "wall": time.perf_counter() - start,
                  "cpu": usage.ru_utime + usage.ru_stime, "rss_kb": peak[0] or usage.ru_maxrss,
                  "experiments": size})
    stdout, stderr = (out[name].decode(errors="replace") for name in ("stdout", "stderr"))
    if proc.returncode != 0:
        raise HelmError(stderr.strip() or f"helm template failed ({proc.returncode})")
    return stdout


def _write(path: str) -> None:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    Path(path).write_text(json.dumps({
        "wall": time.perf_counter() - started,
        "tfgen_cpu": own.ru_utime + own.ru_stime, "tfgen_rss_kb": own.ru_maxrss,
        "children_cpu": children.ru_utime + children.ru_stime, "helms": helms,
        # what the disk did for tfgen and its children (512-byte blocks), and the page faults
        # that read it: a run whose wall time grows faster than its CPU waits for these
        "blocks_read": own.ru_inblock + children.ru_inblock,
        "blocks_written": own.ru_oublock + children.ru_oublock,
        "major_faults": own.ru_majflt + children.ru_majflt}))


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    command.run = run
    atexit.register(_write, out)
    from tfgen.cli import main as tfgen
    tfgen(args=args, prog_name="tfgen")


if __name__ == "__main__":
    main()
