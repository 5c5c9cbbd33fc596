"""Child processes that are always stopped and reaped, whatever ends the run.

Every child runs in its own process group (so it and everything it spawns can be stopped
together), its output is read line by line by a thread, and `stop_all` ends them the way a
pod's termination grace period does: SIGTERM, then SIGKILL, then a wait until nothing of the
group runs any more. Signals to tfgen itself (SIGINT, SIGTERM) become a stop request the
supervising loop reads, never an exception in the middle of cleanup.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from ..errors import InputError

EXIT_TIMEOUT = 124  # what coreutils `timeout` returns
STOP_GRACE_SECONDS = 5.0  # SIGTERM, then SIGKILL, like a pod's termination grace period
GROUP_EXIT_SECONDS = 2.0

Output = Callable[[str], None]


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now; sockets are held until all are picked (no repeats)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class StopRequest:
    """A stop request from a signal handler, read by the supervising loop."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.event = threading.Event()

    def __call__(self, signum: int, _frame: Any) -> None:
        self.signum = signum
        self.event.set()


@contextmanager
def signals_to(stop: StopRequest) -> Iterator[None]:
    """SIGINT and SIGTERM become `stop` while the block runs.

    Only the main thread may install handlers; elsewhere (tests in threads) the caller's own
    handling applies and the caller's cleanup still reaps every child.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def start(
    name: str, argv: Sequence[str], env: Mapping[str, str], cwd: str
) -> subprocess.Popen[bytes]:
    """Start one child in a process group of its own, output piped (stderr into stdout)."""
    try:
        return subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: we can stop it and all it spawns
        )
    except OSError as exc:
        raise InputError(f"{name}: cannot run {argv[0]!r}: {exc.strerror}") from exc


def read_output(
    process: subprocess.Popen[bytes], prefix: str, emit: Output, lock: threading.Lock
) -> threading.Thread:
    """A thread that emits each line of the child's output behind `prefix`."""
    assert process.stdout is not None
    thread = threading.Thread(target=_pump, args=(process.stdout, prefix, emit, lock), daemon=True)
    thread.start()
    return thread


def _pump(stream: IO[bytes], prefix: str, emit: Output, lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        with lock:
            emit(f"{prefix} {line}")
    stream.close()


def _stop_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):  # the whole group is already gone
        os.killpg(process.pid, sig)


def stop_all(
    processes: Sequence[subprocess.Popen[bytes]], grace: float = STOP_GRACE_SECONDS
) -> None:
    """SIGTERM every process group, SIGKILL what is left after `grace`, reap every child."""
    for p in processes:
        _stop_group(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in processes:
        with suppress(subprocess.TimeoutExpired):
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
    for p in processes:
        # Also for exited leaders: their group may still hold grandchildren.
        _stop_group(p, signal.SIGKILL)
        p.wait()
    # A signal is delivered asynchronously: wait (briefly) until the grandchildren, which we
    # cannot wait() for, have really ended, so nothing outlives the run.
    groups = {p.pid for p in processes}
    deadline = time.monotonic() + GROUP_EXIT_SECONDS
    while groups & _live_groups() and time.monotonic() < deadline:
        time.sleep(0.02)


def _live_groups() -> set[int]:
    """Process groups with a running (not zombie) member; empty where /proc is missing."""
    groups = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while we looked
        if fields[0] != "Z":
            groups.add(int(fields[2]))
    return groups


def supervise(
    by_name: Mapping[str, subprocess.Popen[bytes]],
    leader: str,
    stop: StopRequest,
    deadline: float | None,
    timeout: float | None,
    poll_seconds: float,
) -> tuple[int, str]:
    """Wait until the leader exits, another child fails, a stop is requested or the deadline
    passes; (exit status, what happened in words)."""
    while True:
        code = by_name[leader].poll()
        if code is not None:
            return exit_status(code), f"{leader} exited with {code}"
        for name, p in by_name.items():
            other = p.poll()
            if other is not None and other != 0:
                return exit_status(other), f"{name} failed with {other}; the run fails with it"
        if stop.signum is not None:
            name = signal.Signals(stop.signum).name
            return 128 + stop.signum, f"interrupted by {name}"
        if deadline is not None and time.monotonic() >= deadline:
            return EXIT_TIMEOUT, f"timed out after {timeout:g}s"
        stop.event.wait(poll_seconds)


def exit_status(code: int) -> int:
    # A child killed by signal N reports -N; a shell would say 128+N.
    return 128 - code if code < 0 else code
