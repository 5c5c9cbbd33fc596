"""The hostile corpus: every case in tests/hostile/<class>/<case>.yaml run through the real CLI.

Each case is a small change to a fresh copy of this repository (a spec, files, symlinks, FIFOs),
one tfgen command run as a subprocess with a hang limit and a memory bound, and the exit code and
message it must give. Every case also asserts what no input may ever cause: a Python traceback,
a hang, unbounded memory, a file under argo/ that is neither its old content nor the content a
clean render writes, or a write outside the repository. The case format is in
tests/hostile/README.md; the figures (per class, slowest case, peak memory) are printed at the
end of the session.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import HOSTILE_RECORDS, HostileRecord, copy_repo_parts, git, git_init, go_tool
from tfgen.repo.cache import DATABASE

CORPUS = Path(__file__).parent / "hostile"
CASE_FILES = sorted(CORPUS.rglob("*.yaml"))

# The walkthrough experiment; `spec:` cases change a copy of it.
WALKTHROUGH = "experiments/distributed-mnist.yaml"
WALKTHROUGH_NAME = Path(WALKTHROUGH).stem  # a `spec:` without a name replaces it

# A command still running after this long is killed and the case fails as a hang. The issue's
# bar is 2 s per case; the limit is ten times that so that a loaded machine does not turn a
# slow case into a false hang (the summary lists every case over 2 s).
HANG_LIMIT = 20.0
SLOW = 2.0

# Every process of a case (tfgen and the helm it starts) may map at most this much data memory
# (RLIMIT_DATA: heap and private anonymous mappings). A case that reads /dev/zero or expands a
# YAML bomb hits it and fails loudly instead of taking the machine down. RLIMIT_AS would be the
# obvious choice, but the Go runtime in helm reserves large address ranges up front and then
# aborts at random under it; RLIMIT_DATA leaves those reservations alone. tfgen's own check of
# this repository peaks far below (see the session summary).
MEMORY_LIMIT = 1 << 30

# No file a case's processes write (their output included) may grow past this: a case that
# copies /dev/zero to its output is stopped by SIGXFSZ instead of filling the disk. Generated
# files and the cache are a few KiB.
FILE_LIMIT = 64 << 20

# The keys of a case file and the type each must have; anything else is a typo and an error.
REQUIRED = {"about": str, "run": list, "exit": int, "expect": list}
OPTIONAL = {
    "spec": dict, "files": dict, "symlinks": dict, "fifos": list, "commit": bool,
    "env": dict, "stdin": str, "forbid": list, "stdout": list, "stderr": list, "outside": dict,
    "then": dict,
}
SPEC_KEYS = {"name", "set"}

# Case text may name the copy's root and a folder outside it (targets of escaping symlinks):
# these placeholders are replaced in run arguments, env values and symlink targets.
ROOT, OUTSIDE = "{root}", "{outside}"
# ... and the file name of the cache database this tfgen uses, anywhere in the case: a case
# about the database is then about the live one, whatever the cache's format.
CACHE_DATABASE = "{database}"

TRACEBACK = "Traceback (most recent call last)"

# Output beyond this is not read: a case that floods its output fails on the flood, not by
# exhausting the test process.
OUTPUT_LIMIT = 4 << 20


def case_id(path: Path, corpus: Path = CORPUS) -> str:
    return path.relative_to(corpus).with_suffix("").as_posix()


# --- reading a case -----------------------------------------------------------------------------


def load_case(path: Path, corpus: Path = CORPUS) -> dict[str, Any]:
    """The case in `path`, or ValueError naming every way it is malformed."""
    name = case_id(path, corpus)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8").replace(CACHE_DATABASE, DATABASE))
    except yaml.YAMLError as exc:
        raise ValueError(f"{name}: not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{name}: a case is a mapping")
    errors = []
    for key, kind in REQUIRED.items():
        if key not in data:
            errors.append(f"missing `{key}`")
        elif not isinstance(data[key], kind) or isinstance(data[key], bool) is not (kind is bool):
            errors.append(f"`{key}` must be a {kind.__name__}")
    for key in sorted(set(data) - set(REQUIRED)):
        if key not in OPTIONAL:
            known = ", ".join(sorted({*REQUIRED, *OPTIONAL}))
            errors.append(f"unknown key `{key}` (known: {known})")
        elif not isinstance(data[key], OPTIONAL[key]):
            errors.append(f"`{key}` must be a {OPTIONAL[key].__name__}")
    if isinstance(data.get("about"), str) and (not data["about"].strip() or "\n" in data["about"]):
        errors.append("`about` is one non-empty line")
    for key in ("run", "expect", "forbid", "stdout", "stderr", "fifos"):
        if isinstance(data.get(key), list) and not all(isinstance(v, str) for v in data[key]):
            errors.append(f"every item of `{key}` is a string")
    if isinstance(data.get("expect"), list) and not data["expect"]:
        errors.append("`expect` names at least one substring of the expected message")
    if isinstance(data.get("spec"), dict):
        spec = data["spec"]
        errors += [f"unknown key `spec.{k}` (known: name, set)"
                   for k in sorted(set(spec) - SPEC_KEYS)]
        name = spec.get("name", WALKTHROUGH_NAME)
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            errors.append("`spec.name` is a file name (use `files` for other paths)")
        if not isinstance(spec.get("set", {}), dict):
            errors.append("`spec.set` maps dotted paths to values")
    if "then" in data and not data.get("commit"):
        errors.append("`then` changes files after the commit: it needs `commit: true`")
    for key in ("files", "symlinks", "outside", "then"):
        mapping = data.get(key)
        for rel, value in (mapping.items() if isinstance(mapping, dict) else ()):
            if not _inside(str(rel)):
                errors.append(f"`{key}`: {rel!r} is not a relative path inside the copy")
            if not (isinstance(value, str) or (value is None and key in ("files", "then"))):
                errors.append(f"`{key}.{rel}` must be a string")
    for rel in data["fifos"] if isinstance(data.get("fifos"), list) else ():
        if isinstance(rel, str) and not _inside(rel):
            errors.append(f"`fifos`: {rel!r} is not a relative path inside the copy")
    env = data.get("env")
    for name, value in (env.items() if isinstance(env, dict) else ()):
        if not isinstance(value, (str, type(None))):
            errors.append(f"`env.{name}` is a string, or null to unset it")
    if errors:
        raise ValueError(f"{name}: " + "; ".join(errors))
    return data


def _inside(rel: str) -> bool:
    parts = Path(rel).parts
    return bool(parts) and not Path(rel).is_absolute() and ".." not in parts


def _split_path(dotted: str) -> list[str]:
    """`a.b\\.c.0` -> ["a", "b.c", "0"]: a backslash keeps a dot inside a key."""
    parts, current, chars = [], "", iter(dotted)
    for char in chars:
        if char == "\\":
            current += next(chars, "\\")
        elif char == ".":
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def set_path(data: Any, dotted: str, value: Any) -> None:
    """Set (or with None, delete) `dotted` in `data`; missing mappings on the way are created."""
    *parents, last = _split_path(dotted)
    node = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if isinstance(node, list):
        index = int(last)
        if value is None:
            del node[index]
        elif index == len(node):
            node.append(value)
        else:
            node[index] = value
    elif value is None:
        node.pop(last, None)
    else:
        node[last] = value


# --- building a case's repository ------------------------------------------------------------


def _fill(text: str, root: Path, outside: Path) -> str:
    return text.replace(ROOT, str(root)).replace(OUTSIDE, str(outside))


def _remove(path: Path) -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def prepare(case: dict[str, Any], base: Path, walkthrough: dict[str, Any],
            where: Path) -> tuple[Path, Path]:
    """A fresh copy of `base` under `where` with the case's changes; returns (root, outside).
    Order: spec, files, symlinks, commit, then, FIFOs (a FIFO cannot be committed)."""
    root, outside = where / "repo", where / "outside"
    shutil.copytree(base, root, symlinks=True)
    outside.mkdir()
    for rel, text in (case.get("outside") or {}).items():
        (outside / rel).parent.mkdir(parents=True, exist_ok=True)
        (outside / rel).write_text(text, encoding="utf-8")
    if "spec" in case:
        spec = case["spec"]
        name = spec.get("name", WALKTHROUGH_NAME)
        data = copy.deepcopy(walkthrough)
        data["metadata"]["name"] = name
        if name != WALKTHROUGH_NAME:  # a second run may not share the walkthrough's logs
            data["spec"]["tensorboard"]["logDir"] = f"/training/{name}/logs"
        for dotted, value in (spec.get("set") or {}).items():
            set_path(data, str(dotted), value)
        (root / "experiments" / f"{name}.yaml").write_text(
            yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    _write_files(root, case.get("files") or {})
    for rel, target in (case.get("symlinks") or {}).items():
        path = root / rel
        _remove(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(_fill(target, root, outside), path)
    if case.get("commit"):
        git(root, "add", "-A")
        git(root, "commit", "-q", "--allow-empty", "-m", "case")
        _write_files(root, case.get("then") or {})
    for rel in case.get("fifos") or []:
        path = root / rel
        _remove(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
    return root, outside


def _write_files(root: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        path = root / rel
        _remove(path)
        if text is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


Snapshot = dict[str, tuple[str, Any]]


def snapshot(top: Path) -> Snapshot:
    """Every entry under `top` (itself included, as ".") by kind and content, without following
    symlinks or opening anything but regular files."""
    result: Snapshot = {}

    def entry(path: Path) -> tuple[str, Any]:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return ("link", os.readlink(path))
        if stat.S_ISDIR(info.st_mode):
            return ("dir", None)
        if stat.S_ISREG(info.st_mode):
            return ("file", path.read_bytes())
        return ("other", stat.S_IFMT(info.st_mode))

    if not top.is_symlink() and not top.exists():
        return result
    result["."] = entry(top)
    if result["."][0] == "dir":
        for folder, dirs, files in os.walk(top):
            for name in dirs + files:
                path = Path(folder) / name
                result[path.relative_to(top).as_posix()] = entry(path)
    return result


# --- running the CLI ----------------------------------------------------------------------------


@dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    max_rss_kib: int
    hung: bool
    problems: list[str] = field(default_factory=list)
    about: str = ""

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


# Set inside the child before tfgen starts, so the limits cover tfgen and everything it runs.
# A launcher rather than `preexec_fn`, which is not safe with the threads that run cases.
# It also writes the largest memory peak of tfgen and of the processes it ran (helm) to the
# file named first on its command line: wait4's figure for the child counts what the test
# process held when it started it (tfgen's own peak is VmHWM, which starts at the exec).
LAUNCHER = (
    "import resource, runpy, sys\n"
    f"resource.setrlimit(resource.RLIMIT_DATA, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
    f"resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_LIMIT}, {FILE_LIMIT}))\n"
    "peak, sys.argv = sys.argv[1], ['tfgen', *sys.argv[2:]]\n"
    "try:\n"
    "    runpy.run_module('tfgen', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    own = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n"
    "    ran = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "    open(peak, 'w').write(str(max(own, ran)))\n"
)


def run_tfgen(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None,
              logs: Path) -> Outcome:
    """Run tfgen with `args` in `cwd`; waits with os.wait4 for the child's own resource usage."""
    out_path, err_path, peak_path = logs / "stdout", logs / "stderr", logs / "peak-kib"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        stdin_arg: Any = subprocess.PIPE if stdin is not None else subprocess.DEVNULL
        start = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(peak_path), *args], cwd=cwd, env=env,
            stdin=stdin_arg,
            stdout=out, stderr=err, start_new_session=True,
        )
        hung = threading.Event()
        reaped = threading.Lock()

        def kill() -> None:
            with reaped:
                if process.returncode is None:
                    hung.set()
                    os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(HANG_LIMIT, kill)
        timer.start()
        if stdin is not None:
            assert process.stdin is not None
            try:
                process.stdin.write(stdin.encode("utf-8"))
                process.stdin.close()
            except BrokenPipeError:
                pass
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - start
        with reaped:
            process.returncode = os.waitstatus_to_exitcode(status)
        timer.cancel()
        # Helm or a replica left behind by a killed tfgen must not outlive the case.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    peak = _read(peak_path) if peak_path.exists() else ""  # none when killed
    return Outcome(
        code=None if hung.is_set() else process.returncode,
        stdout=_read(out_path), stderr=_read(err_path), seconds=seconds,
        max_rss_kib=int(peak) if peak.isdigit() else int(usage.ru_maxrss), hung=hung.is_set(),
    )


def _read(path: Path) -> str:
    with open(path, "rb") as handle:
        data = handle.read(OUTPUT_LIMIT)
    return data.decode("utf-8", errors="replace")


def tfgen_env(case: dict[str, Any], root: Path, outside: Path) -> dict[str, str]:
    # kubeconform found: every `tfgen check` (`--validator auto`) runs it beside the builtin
    env = {**os.environ, "TFGEN_KUBECONFORM": str(go_tool("kubeconform"))}
    for name, value in (case.get("env") or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = _fill(value, root, outside)
    return env


# --- one case, start to finish -------------------------------------------------------------------


@dataclass
class Session:
    base: Path
    walkthrough: dict[str, Any]
    scratch: Path


def run_case(path: Path, session: Session) -> Outcome:
    case = load_case(path)
    where = session.scratch / case_id(path).replace("/", "--")
    where.mkdir(parents=True)
    root, outside = prepare(case, session.base, session.walkthrough, where)
    before, outside_before = snapshot(root / "argo"), snapshot(outside)
    args = [_fill(arg, root, outside) for arg in case["run"]]
    outcome = run_tfgen(args, root, tfgen_env(case, root, outside), case.get("stdin"), where)
    outcome.about = case["about"]
    problems = outcome.problems
    if outcome.hung:
        problems.append(f"hang: still running after {HANG_LIMIT:.0f} s, killed")
    elif outcome.code != case["exit"]:
        problems.append(f"exit code {outcome.code}, expected {case['exit']}")
    if TRACEBACK in outcome.output:
        problems.append("a Python traceback")
    for key, text, must in (("expect", outcome.output, True), ("stdout", outcome.stdout, True),
                            ("stderr", outcome.stderr, True), ("forbid", outcome.output, False)):
        where_ = "printed" if key in ("expect", "forbid") else f"on {key}"
        problems += [f"{'missing' if must else 'forbidden'} text {where_}: {t!r}"
                     for t in case.get(key, []) if (t in text) is not must]
    if snapshot(outside) != outside_before:
        problems.append("wrote outside the repository (the folder outside it changed)")
    after = snapshot(root / "argo")
    if after != before:
        problems += argo_problems(before, after, clean_render(case, session, where))
    return outcome


def clean_render(case: dict[str, Any], session: Session, where: Path) -> Snapshot:
    """argo/ as a clean `render --prune` (pruned files count as rendered too) leaves it, in a
    second copy with the same input."""
    reference_where = where / "reference"
    reference_where.mkdir()
    root, outside = prepare(case, session.base, session.walkthrough, reference_where)
    run_tfgen(["render", "--prune"], root, tfgen_env(case, root, outside), None, reference_where)
    return snapshot(root / "argo")


def argo_problems(before: Snapshot, after: Snapshot, reference: Snapshot) -> list[str]:
    """Every entry of argo/ that is neither as it was before the command nor as the clean
    render leaves it (a half-written file, a wrong kind of entry, a file that vanished)."""
    problems = []
    for rel in sorted(set(before) | set(after)):
        state = after.get(rel)
        if state != before.get(rel) and state != reference.get(rel):
            what = "missing" if state is None else f"a {state[0]}"
            problems.append(f"argo/{rel} is {what} that is neither its old content "
                            "nor a clean render's")
    return problems


# --- pytest wiring -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def hostile_session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The repository copy every case starts from, built once: the chart, schemas, argo/, specs
    and tfgen.yaml in a new Git repository with one commit."""
    base = git_init(copy_repo_parts(tmp_path_factory.mktemp("hostile-base") / "repo"))
    walkthrough = yaml.safe_load((base / WALKTHROUGH).read_text(encoding="utf-8"))
    return Session(base=base, walkthrough=walkthrough, scratch=tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="session")
def hostile_outcomes(request: pytest.FixtureRequest, hostile_session: Session) -> dict[Path, Any]:
    """The outcome of every selected case, run in parallel: the cases are independent
    subprocesses, mostly waiting on Python start-up and helm, so a pool as wide as the machine
    runs the corpus in a fraction of the serial time without a test-runner plugin."""
    selected = [item.callspec.params["case_file"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_case"
                and item.module is not None and item.module.__name__ == __name__]

    def one(path: Path) -> Any:
        try:
            return run_case(path, hostile_session)
        except ValueError as exc:  # a malformed case: reported by its own test
            return exc

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        outcomes = dict(zip(selected, pool.map(one, selected), strict=True))
    records = request.config.stash.setdefault(HOSTILE_RECORDS, [])
    for path, outcome in outcomes.items():
        if isinstance(outcome, Outcome):
            records.append(HostileRecord(case_id(path), outcome.seconds, outcome.max_rss_kib,
                                         not outcome.problems))
    return outcomes


def test_corpus_is_well_formed() -> None:
    assert len(CASE_FILES) > 0, "tests/hostile/ holds no case"
    errors = []
    for path in CASE_FILES:
        if len(path.relative_to(CORPUS).parts) != 2:
            errors.append(f"{case_id(path)}: a case lives in tests/hostile/<class>/<case>.yaml")
        try:
            load_case(path)
        except ValueError as exc:
            errors.append(str(exc))
    assert not errors, "\n".join(errors)


def _paths() -> Iterator[Any]:
    for path in CASE_FILES:
        yield pytest.param(path, id=case_id(path))


@pytest.mark.slow
@pytest.mark.parametrize("case_file", list(_paths()))
def test_case(case_file: Path, hostile_outcomes: dict[Path, Any]) -> None:
    outcome = hostile_outcomes[case_file]
    if isinstance(outcome, ValueError):
        pytest.fail(str(outcome), pytrace=False)
    if outcome.problems:
        pytest.fail(
            f"{case_id(case_file)} ({outcome.about}):\n  " + "\n  ".join(outcome.problems)
            + f"\n--- stdout ---\n{outcome.stdout[-3000:]}"
            + f"\n--- stderr ---\n{outcome.stderr[-3000:]}",
            pytrace=False,
        )


def test_set_path() -> None:
    data: dict[str, Any] = {"a": {"b": [1, 2]}, "x": 1}
    set_path(data, "a.b.1", 5)
    set_path(data, "a.b.2", 6)
    set_path(data, r"a.c\.d.e", "v")
    set_path(data, "x", None)
    assert data == {"a": {"b": [1, 5, 6], "c.d": {"e": "v"}}}
    set_path(data, "a.b.0", None)
    assert data["a"]["b"] == [5, 6]


def _under_memory_limit(code: str) -> subprocess.CompletedProcess[str]:
    """Python `code` run in a child under the harness's memory bound."""
    limit = (f"import resource\n"
             f"resource.setrlimit(resource.RLIMIT_DATA, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n")
    return subprocess.run([sys.executable, "-c", limit + code], capture_output=True, text=True,
                          timeout=60, check=False)


def test_memory_limit_lets_helm_run(tmp_path: Path) -> None:
    """The bound is not so tight that the real helm fails under it."""
    outcome = run_tfgen(["--version"], tmp_path, dict(os.environ), None, tmp_path)
    assert outcome.code == 0 and "tfgen" in outcome.stdout
    helm = os.environ.get("TFGEN_HELM") or shutil.which("helm")
    assert helm, "no helm to try"
    result = _under_memory_limit(
        f"import subprocess, sys\nsys.exit(subprocess.run([{helm!r}, 'version']).returncode)")
    assert result.returncode == 0, result.stderr
    assert "Version" in result.stdout


def test_memory_limit_stops_runaway_allocation(tmp_path: Path) -> None:
    """The bound holds: a child asking for twice the limit gets MemoryError."""
    result = _under_memory_limit(f"bytearray({2 * MEMORY_LIMIT})")
    assert result.returncode != 0 and "MemoryError" in result.stderr


def test_argo_problems_accepts_only_old_or_clean_content() -> None:
    before = {".": ("dir", None), "a.yaml": ("file", b"old"), "gone.yaml": ("file", b"x")}
    reference = {".": ("dir", None), "a.yaml": ("file", b"new")}
    assert argo_problems(before, dict(before), reference) == []
    assert argo_problems(before, reference, reference) == []  # written and pruned as render does
    half = {**before, "a.yaml": ("file", b"ne")}
    assert argo_problems(before, half, reference) == [
        "argo/a.yaml is a file that is neither its old content nor a clean render's"]
    link = {**before, "b": ("link", "/etc")}
    assert argo_problems(before, link, reference) == [
        "argo/b is a link that is neither its old content nor a clean render's"]


def test_malformed_cases_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "hostile" / "demo"
    folder.mkdir(parents=True)
    bad = folder / "typo.yaml"
    bad.write_text("about: x\nrun: [validate]\nexit: 0\nexpect: [ok]\nexpcet: [typo]\n"
                   "files: [not, a, mapping]\nsymlinks: {../out: /etc}\n")
    with pytest.raises(ValueError) as info:
        load_case(bad, corpus=tmp_path / "hostile")
    message = str(info.value)
    assert "unknown key `expcet`" in message
    assert "`files` must be a dict" in message
    assert "'../out' is not a relative path inside the copy" in message
