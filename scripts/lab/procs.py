"""The lab's processes: started with a log file and a PID file each, stopped by that PID.

A PID file records the PID and the process's start time (from /proc), so that stopping never
signals a process that merely reuses the number after ours ended. Nothing is ever stopped by
name: other people's etcd or redis on the same machine are none of the lab's business.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

# The processes this Python process started, by PID: stopping reaps them through their Popen
# (a Popen dropped while its process runs warns, and a test session treats warnings as errors).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 now, the kernel's choice (so two labs do
    not collide). All are held open until all are chosen: one at a time, the kernel may hand
    out the same port twice."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: count fields after its closing parenthesis
    return stat.rsplit(")", 1)[1].split()[19]


def spawn(state: Path, name: str, argv: list[str], env: dict[str, str],
          cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start `argv` in its own session (a Ctrl-C in the terminal that ran `up` does not reach
    it), output to .lab/logs/<name>.log, PID to .lab/pids/<name>.pid."""
    (state / "logs").mkdir(parents=True, exist_ok=True)
    (state / "pids").mkdir(parents=True, exist_ok=True)
    with open(state / "logs" / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)
    (state / "pids" / f"{name}.pid").write_text(f"{proc.pid} {_start_time(proc.pid)}\n")
    _CHILDREN[proc.pid] = proc
    return proc


def _reap() -> None:
    """Collect the exit status of every child of ours that has ended (else it lingers as a
    zombie that looks alive in /proc)."""
    for pid, child in list(_CHILDREN.items()):
        if child.poll() is not None:
            del _CHILDREN[pid]


def recorded(state: Path) -> dict[str, int]:
    """name -> PID of every recorded process that is still the one the lab started, and
    still running."""
    _reap()
    alive = {}
    for pidfile in sorted((state / "pids").glob("*.pid")):
        fields = pidfile.read_text().split()
        if (len(fields) == 2 and _start_time(int(fields[0])) == fields[1]
                and _state_letter(int(fields[0])) != "Z"):
            alive[pidfile.stem] = int(fields[0])
        else:
            pidfile.unlink()  # that process is gone: nothing to stop
    return alive


def _gone(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:  # ours: reap it (the pytest fixture's case)
        if child.poll() is None:
            return False
        del _CHILDREN[pid]
        return True
    state = _state_letter(pid)
    return state is None or state == "Z"


def _state_letter(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _signal(pid: int, sig: int) -> None:
    """Signal the process group our process leads (spawn made it a session leader, so its
    group id is its PID): helpers it started (git daemon's per-connection children, the repo
    server's helm and git) go with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def stop_all(state: Path, grace: float = 10.0, last: tuple[str, ...] = ()) -> list[str]:
    """SIGTERM every recorded process, SIGKILL what is left after `grace` seconds, wait until
    all are gone, remove their PID files; returns the names stopped. Those named in `last`
    are stopped only once the others are gone. Safe to run again."""
    if not (state / "pids").is_dir():
        return []
    alive = recorded(state)
    first = {n: p for n, p in alive.items() if n not in last}
    _stop(first, grace)
    _stop({n: p for n, p in alive.items() if n not in first}, grace)
    for name in alive:
        (state / "pids" / f"{name}.pid").unlink(missing_ok=True)
    return sorted(alive)


def _stop(pids: dict[str, int], grace: float) -> None:
    for pid in pids.values():
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not all(_gone(p) for p in pids.values()):
        time.sleep(0.1)
    for pid in pids.values():
        if not _gone(pid):
            _signal(pid, signal.SIGKILL)
    while not all(_gone(p) for p in pids.values()):
        time.sleep(0.05)


def memory_kib(pid: int) -> dict[str, int]:
    """The process's resident memory now (VmRSS) and at its peak (VmHWM), in KiB."""
    found = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
    except OSError:
        pass
    return found
