"""The hostile corpus's harness: every case in tests/hostile/<class>/<case>.yaml run through
the real CLI (test_hostile.py holds the tests, the format is in tests/hostile/README.md).

Each case is a small change to a fresh copy of this repository (a spec, files, symlinks, FIFOs),
one tfgen command run as a subprocess with a hang limit and a memory bound, and the exit code and
message it must give. Every case also asserts what no input may ever cause: a Python traceback,
a hang, unbounded memory, a file under argo/ that is neither its old content nor the content a
clean render writes, or a write outside the repository.

The corpus is run once per pytest run (conftest's `corpus` fixture), and the gate's comparison
(test_validate_gate.py) reads the same records: for each case about specs, its `validate` and
`check` verdicts are taken in the same pass, in their own fresh copy.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import copy_repo_parts, git, git_init, go_tool
from tfgen.repo import layout
from tfgen.repo.cache import CACHE_DIRNAME, DATABASE

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
    # `base` after one all-clear check: its cache holds the bundled experiments' verdicts, so
    # the gate's check of a case renders again only what the case changed (the cache gives
    # the verdict a check without it gives: test_one_road.py)
    checked: Path


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


# --- the gate's verdicts: validate against check (test_validate_gate.py) ----------------------

Found = set[tuple[str, int, str, str]]

# What a case may change that is no part of a spec: the chart and the helm that renders it. A
# chart or a helm changed by hand is the gate's to judge (its backstop); validate reads specs.
NOT_SPECS = (f"{layout.CHART_PATH}/",)
TOOLS = ("TFGEN_HELM", "PATH")


def _touched(case: dict[str, Any]) -> list[str]:
    return [str(rel) for rel in (*(case.get("files") or {}), *(case.get("symlinks") or {}),
                                 *(case.get("then") or {}), *(case.get("fifos") or []))]


def about_specs(case: dict[str, Any]) -> bool:
    """Whether the case changes only specs and repository settings (not the chart or helm)."""
    return (not any(rel.startswith(NOT_SPECS) for rel in _touched(case))
            and not any(name in TOOLS for name in case.get("env") or {}))


def spec_problems(output: str) -> Found:
    """(path, line, message, severity) of every problem in a spec file in `--format json`
    output: check must see validate's warnings as warnings, and its errors as errors."""
    try:
        items = json.loads(output or "[]")
    except json.JSONDecodeError:
        return set()  # no problem list (a refused tfgen.yaml): nothing about a spec
    return {(p["path"], p["line"], p["message"], p.get("severity", "error")) for p in items
            if isinstance(p, dict) and str(p.get("path", "")).startswith(
                f"{layout.EXPERIMENTS_DIR}/") and str(p["path"]).endswith(layout.SPEC_SUFFIX)}


def verdicts(path: Path, session: Session) -> tuple[Found, Found]:
    """(validate's, check's) spec problems in a fresh copy prepared as the case prepares it:
    of the checked base, unless the case is about the cache."""
    case = load_case(path)
    if not about_specs(case):
        return set(), set()
    where = session.scratch / ("gate--" + case_id(path).replace("/", "--"))
    where.mkdir(parents=True)
    about_cache = any(CACHE_DIRNAME in rel for rel in _touched(case)) or "env" in case
    base = session.base if about_cache else session.checked
    root, outside = prepare(case, base, session.walkthrough, where)
    env = tfgen_env(case, root, outside)
    out = []
    for command in ("validate", "check"):
        logs = where / command
        logs.mkdir()
        outcome = run_tfgen([command, "--format", "json"], root, env, None, logs)
        out.append(spec_problems(outcome.stdout))
    return out[0], out[1]


# --- one run of the corpus -------------------------------------------------------------------


@dataclass
class Records:
    """What one run of the corpus found: each case's outcome (or why it is malformed), and the
    gate's (validate's, check's) spec problems."""

    outcomes: dict[Path, Outcome | ValueError]
    verdicts: dict[Path, tuple[Found, Found]]


def selected(session: pytest.Session, test: str) -> list[Path]:
    """The case files of the items of `test` this run selected."""
    return [item.callspec.params["case_file"] for item in session.items
            if getattr(item, "originalname", "") == test]


def run_corpus(cases: list[Path], gated: list[Path], session: Session) -> Records:
    """Every case of `cases` run, and the gate's verdicts of every case of `gated`, in one
    pool: the runs are independent subprocesses, mostly waiting on Python start-up and helm, so
    a pool as wide as the machine runs the corpus in a fraction of the serial time."""

    def one(path: Path) -> Outcome | ValueError:
        try:
            return run_case(path, session)
        except ValueError as exc:  # a malformed case: reported by its own test
            return exc

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        outcomes = pool.map(one, cases)
        found = pool.map(lambda p: verdicts(p, session), gated)
        return Records(dict(zip(cases, outcomes, strict=True)),
                       dict(zip(gated, found, strict=True)))


def new_session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The repository copy every case starts from, built once: the chart, schemas, argo/, specs
    and tfgen.yaml in a new Git repository with one commit; and a copy of it checked once."""
    base = git_init(copy_repo_parts(tmp_path_factory.mktemp("hostile-base") / "repo"))
    walkthrough = yaml.safe_load((base / WALKTHROUGH).read_text(encoding="utf-8"))
    checked = tmp_path_factory.mktemp("hostile-checked") / "repo"
    shutil.copytree(base, checked, symlinks=True)
    logs = checked.parent / "logs"
    logs.mkdir()
    outcome = run_tfgen(["check"], checked, tfgen_env({}, checked, logs), None, logs)
    assert outcome.code == 0 and (checked / CACHE_DIRNAME).is_dir(), outcome.output
    return Session(base=base, walkthrough=walkthrough, scratch=tmp_path_factory.mktemp("hostile"),
                   checked=checked)

