"""Run every replica of an experiment as a local process, wired like the cluster would wire it.

Each pod `tfgen explain` lists becomes one child process running the pod's command and args (or
a `--command` override), with the TF_CONFIG the training operator would inject, except that the
Service addresses are replaced by free ports on 127.0.0.1 and the volume's mount path by a local
folder. Output is prefixed with the pod name. When the chief/master (worker 0 when there is
none) exits, the remaining processes are stopped, as the operator's cleanPodPolicy Running
deletes the pods still running once the job has finished; a replica failing ends the run too
(the local stand-in for restartPolicy Never). Every child runs in its own process group and is
always stopped and reaped: on normal exit, timeout, SIGINT/SIGTERM and errors.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import EnvironmentProblem, InputError
from . import tfconfig

EXIT_TIMEOUT = 124  # what coreutils `timeout` returns
STOP_GRACE_SECONDS = 5.0  # SIGTERM, then SIGKILL, like a pod's termination grace period

Output = Callable[[str], None]


@dataclass
class LocalPod:
    """One pod as a local process: what to run and where it listens."""

    pod: tfconfig.Pod
    argv: list[str]
    env: dict[str, str]
    cwd: str
    process: subprocess.Popen[bytes] | None = None


@dataclass
class RunResult:
    """How the local run ended."""

    exit_code: int
    reason: str  # human sentence: "master-0 exited with 0", "timed out after 30s", ...
    leader: str
    exit_codes: dict[str, int | None] = field(default_factory=dict)  # pod -> code, None=stopped
    notes: list[str] = field(default_factory=list)
    data_dir: str = ""
    tensorboard_url: str = ""


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


def map_mount_path(text: str, mount_path: str, local_dir: str) -> str:
    """Replace `mount_path` where it is a whole path prefix (`/training/x`, `--d=/training`)."""
    if not mount_path or mount_path == "/":
        return text
    pattern = r"(?<![\w./-])" + re.escape(mount_path.rstrip("/")) + r"(?=/|$|[^\w.-])"
    return re.sub(pattern, lambda _m: local_dir, text)


def leader_of(pods: Sequence[tfconfig.Pod]) -> tfconfig.Pod:
    """The pod whose end ends the job: chief/master, else worker 0 (the operator's default
    success policy), else the first pod."""
    for wanted in (("Chief", 0), ("Master", 0), ("Worker", 0)):
        for pod in pods:
            if (pod.replica_type, pod.index) == wanted:
                return pod
    return pods[0]


def _interpreter(argv: list[str]) -> list[str]:
    # `python` in an image is the image's interpreter; locally the one running tfgen is the
    # one that has the project's optional TensorFlow installed.
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    return argv


def plan(
    pods: Sequence[tfconfig.Pod],
    local_pods: Sequence[tfconfig.Pod],
    *,
    mount_path: str,
    data_dir: str,
    command: Sequence[str] | None = None,
    base_env: Mapping[str, str] | None = None,
) -> tuple[list[LocalPod], list[str]]:
    """What each local process runs: argv, environment and working directory, plus notes."""
    notes: list[str] = []
    env_base = dict(os.environ if base_env is None else base_env)
    env_base.pop("TF_CONFIG", None)
    env_base["PYTHONUNBUFFERED"] = "1"  # so lines reach the prefixed output as they happen
    out: list[LocalPod] = []
    skipped: set[str] = set()
    for pod, local in zip(pods, local_pods, strict=True):
        cmd = list(command) if command is not None else list(pod.command)
        argv = [map_mount_path(a, mount_path, data_dir) for a in cmd + list(pod.args)]
        if not cmd:
            raise InputError(
                f"{pod.name} has no command (the image's entrypoint cannot run locally); "
                "pass --command"
            )
        env = dict(env_base)
        for var in pod.env:
            name = str(var.get("name", ""))
            if "value" in var:
                env[name] = map_mount_path(str(var["value"]), mount_path, data_dir)
            elif name not in skipped:
                skipped.add(name)
                notes.append(f"env {name} comes from a Secret or ConfigMap; not set locally")
        if local.tf_config is not None:
            env["TF_CONFIG"] = local.tf_config
        env["TFGEN_POD_NAME"] = pod.name
        cwd = map_mount_path(pod.working_dir, mount_path, data_dir) if pod.working_dir else ""
        if not cwd or not Path(cwd).is_dir():
            cwd = os.getcwd()
        out.append(LocalPod(pod=pod, argv=_interpreter(argv), env=env, cwd=cwd))
    return out, notes


class _Stop:
    """A stop request from a signal handler, read by the supervising loop."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.event = threading.Event()

    def __call__(self, signum: int, _frame: Any) -> None:
        self.signum = signum
        self.event.set()


@contextmanager
def _signals_to(stop: _Stop) -> Iterator[None]:
    # Only the main thread may install handlers; elsewhere (tests in threads) the caller's own
    # handling applies and the finally below still reaps every child.
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


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


GROUP_EXIT_SECONDS = 2.0


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


def _start(local: LocalPod) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            local.argv,
            env=local.env,
            cwd=local.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: we can stop it and all it spawns
        )
    except OSError as exc:
        raise InputError(f"{local.pod.name}: cannot run {local.argv[0]!r}: {exc.strerror}") from exc


def find_tensorboard() -> str | None:
    """`tensorboard` next to this interpreter (the venv) or on PATH."""
    sibling = Path(sys.executable).with_name("tensorboard")
    if sibling.exists():
        return str(sibling)
    return shutil.which("tensorboard")


def run_pods(
    pods: Sequence[tfconfig.Pod],
    tfjob: Mapping[str, Any],
    *,
    mount_path: str,
    data_dir: str,
    emit: Output,
    command: Sequence[str] | None = None,
    timeout: float | None = None,
    tensorboard_logdir: str | None = None,
    poll_seconds: float = 0.1,
) -> RunResult:
    """Start every pod locally, supervise them and return how the run ended.

    `tfjob` is the rendered TFJob the pods come from; its TF_CONFIG is rebuilt with local
    addresses so the shape (dense or sparse, evaluator included) stays the operator's.
    """
    if not pods:
        raise InputError("the TFJob has no pods to run")
    ports = free_ports(len(pods))
    local_addr = {
        (p.replica_type, p.index): f"127.0.0.1:{port}" for p, port in zip(pods, ports, strict=True)
    }
    local_pods = tfconfig.pods(tfjob, address_of=lambda t, i: local_addr[(t, i)])
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    planned, notes = plan(
        pods, local_pods, mount_path=mount_path, data_dir=data_dir, command=command
    )
    leader = leader_of(pods)
    width = max(len(p.name) for p in pods)
    lock = threading.Lock()
    stop = _Stop()
    training: list[subprocess.Popen[bytes]] = []
    tb: subprocess.Popen[bytes] | None = None
    threads: list[threading.Thread] = []
    result = RunResult(exit_code=1, reason="", leader=leader.name, notes=notes, data_dir=data_dir)
    deadline = None if timeout is None else time.monotonic() + timeout
    emit(
        f"tfgen: {len(pods)} pod{'s' if len(pods) != 1 else ''} on 127.0.0.1, "
        f"{mount_path} -> {data_dir}; the run ends with {leader.name}"
    )
    with _signals_to(stop):
        try:
            if tensorboard_logdir is not None:
                tb = _start_tensorboard(tensorboard_logdir, result)
                if tb is not None:
                    threads.append(_reader(tb, "tensorboard".ljust(width), emit, lock))
                    emit(f"tfgen: TensorBoard at {result.tensorboard_url} on {tensorboard_logdir}")
            by_name: dict[str, subprocess.Popen[bytes]] = {}
            for local in planned:
                local.process = _start(local)
                training.append(local.process)
                by_name[local.pod.name] = local.process
            for local in planned:
                assert local.process is not None
                threads.append(_reader(local.process, local.pod.name.ljust(width), emit, lock))
            result.exit_code, result.reason = _supervise(
                by_name, leader.name, stop, deadline, timeout, poll_seconds
            )
            result.exit_codes = {name: p.poll() for name, p in by_name.items()}
            stop_all(training)
            if tb is not None and tb.poll() is None and stop.signum is None:
                # Training is over; the board is what one wants to look at now.
                emit(
                    f"tfgen: {result.reason}; TensorBoard stays at {result.tensorboard_url} "
                    "until Ctrl-C" + (" or the timeout" if deadline is not None else "")
                )
                while stop.signum is None and tb.poll() is None:
                    if deadline is not None and time.monotonic() >= deadline:
                        break
                    stop.event.wait(poll_seconds)
        finally:
            stop_all(training + ([tb] if tb is not None else []))
            for t in threads:
                t.join(timeout=2)
    return result


def _reader(
    process: subprocess.Popen[bytes], prefix: str, emit: Output, lock: threading.Lock
) -> threading.Thread:
    assert process.stdout is not None
    thread = threading.Thread(target=_pump, args=(process.stdout, prefix, emit, lock), daemon=True)
    thread.start()
    return thread


def _supervise(
    by_name: Mapping[str, subprocess.Popen[bytes]],
    leader: str,
    stop: _Stop,
    deadline: float | None,
    timeout: float | None,
    poll_seconds: float,
) -> tuple[int, str]:
    while True:
        code = by_name[leader].poll()
        if code is not None:
            return _status(code), f"{leader} exited with {code}"
        for name, p in by_name.items():
            other = p.poll()
            if other is not None and other != 0:
                return _status(other), f"{name} failed with {other}; the run fails with it"
        if stop.signum is not None:
            name = signal.Signals(stop.signum).name
            return 128 + stop.signum, f"interrupted by {name}"
        if deadline is not None and time.monotonic() >= deadline:
            return EXIT_TIMEOUT, f"timed out after {timeout:g}s"
        stop.event.wait(poll_seconds)


def _status(code: int) -> int:
    # A child killed by signal N reports -N; a shell would say 128+N.
    return 128 - code if code < 0 else code


def _start_tensorboard(logdir: str, result: RunResult) -> subprocess.Popen[bytes] | None:
    binary = find_tensorboard()
    if binary is None:
        result.notes.append(
            "--tensorboard: tensorboard is not installed here "
            "(pip install 'tfgen[tensorflow]' tensorboard); running without it"
        )
        return None
    Path(logdir).mkdir(parents=True, exist_ok=True)
    (port,) = free_ports(1)
    result.tensorboard_url = f"http://127.0.0.1:{port}/"
    local = LocalPod(
        pod=tfconfig.Pod("tensorboard", "TensorBoard", 0, "", port, 0, (), None),
        argv=[binary, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
        env=dict(os.environ),
        cwd=os.getcwd(),
    )
    return _start(local)


def split_command(command: str | None) -> list[str] | None:
    """`--command "python examples/mnist/main.py"` as an argv (shell quoting rules)."""
    if command is None:
        return None
    argv = shlex.split(command)
    if not argv:
        raise InputError("--command is empty")
    return argv


def require_posix() -> None:
    """Process groups and killpg are POSIX; say so instead of failing half-way."""
    if os.name != "posix":
        raise EnvironmentProblem("tfgen run-local needs a POSIX system (Linux, macOS)")


def run_local(
    spec: Path | str,
    *,
    emit: Output,
    command: str | None = None,
    data_dir: str | None = None,
    timeout: float | None = None,
    tensorboard: bool = False,
) -> RunResult:
    """`tfgen run-local`: explain the spec, then run its pods here.

    `data_dir` stands in for the volume (default: a new temporary folder, kept afterwards so
    the event files and checkpoints can be looked at).
    """
    from .explain import explain_spec  # runs helm; imported lazily like the CLI's other paths

    require_posix()
    explanation = explain_spec(spec)
    local_dir = data_dir or tempfile.mkdtemp(prefix=f"tfgen-{explanation.job}-")
    local_dir = str(Path(local_dir).resolve())
    mount_path = explanation.mount_path
    logdir = None
    if tensorboard:
        if not explanation.log_dir:
            raise InputError(f"{spec}: TensorBoard is disabled in this experiment (no logDir)")
        logdir = map_mount_path(explanation.log_dir, mount_path, local_dir)
    return run_pods(
        explanation.pods,
        explanation.tfjob,
        mount_path=mount_path,
        data_dir=local_dir,
        emit=emit,
        command=split_command(command),
        timeout=timeout,
        tensorboard_logdir=logdir,
    )
