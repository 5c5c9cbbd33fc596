"""Shared pytest configuration: the `--update-golden` flag and its `update_golden` fixture,
the project's helm for every test (many run in other folders), one CLI runner, a machine cache
of each test process's own, and the line that says what a `-m` selection left out."""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Iterator
from dataclasses import astuple
from pathlib import Path
from typing import Any

import helpers
import pytest
from click.testing import CliRunner
from helpers import HOSTILE_RECORDS, HostileRecord, hostile_summary
from hostile_corpus import Outcome, Records, Session, case_id, new_session, run_corpus, selected

PROJECT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    # Tests build repositories in temporary folders; tfgen looks for the helm of the
    # repository it works on, so point it at the project's own (installed by `make setup`).
    for variable, major in (("TFGEN_HELM", 4), ("TFGEN_HELM3", 3)):
        local = PROJECT / ".tools" / "helm" / f"v{major}" / "helm"
        if local.exists():
            os.environ.setdefault(variable, str(local))


# What a test needs that `make setup` does not give, as markers; `make test-fast` leaves them out
# (`-m "not go and not lab and not index"`) and says so in one line.
NEEDS = {"go": "a Go tool of `make go-tools`", "lab": "the lab (`make lab`)",
         "index": "the package index (tfgen installed into a fresh environment)"}
LEFT_OUT = pytest.StashKey[dict[str, int]]()  # tests a `-m` left out: per marker, and others


def pytest_deselected(items: list[pytest.Item]) -> None:
    if not items:
        return
    counts = items[0].config.stash.setdefault(LEFT_OUT, {})
    for item in items:
        need = next((name for name in NEEDS if item.get_closest_marker(name)), "other")
        counts[need] = counts.get(need, 0) + 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: what the controller's summary says, as plain data
        output["left_out"] = session.config.stash.get(LEFT_OUT, {})
        output["hostile"] = [astuple(r) for r in session.config.stash.get(HOSTILE_RECORDS, [])]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    # each xdist worker deselects the same tests: keep one worker's counts; one worker ran the
    # hostile corpus (the `corpus` fixture)
    output = getattr(node, "workeroutput", {})
    if output.get("left_out"):
        node.config.stash[LEFT_OUT] = output["left_out"]
    node.config.stash.setdefault(HOSTILE_RECORDS, []).extend(
        HostileRecord(*fields) for fields in output.get("hostile", []))


def pytest_runtest_setup(item: pytest.Item) -> None:
    # helpers.go_tool refuses a test that needs a Go tool but is not marked so: the marker is
    # what `make test-fast` leaves out, so it must be where the tool is used
    helpers.MARKED_GO = item.get_closest_marker("go") is not None


@pytest.fixture(scope="session", autouse=True)
def own_machine_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """tfgen remembers this machine's programs beside its cache key (`repo.cache`); a tfgen
    of other code empties what another filled. Each test process (one per xdist worker) keeps
    its own key and memory, so no two processes share a cache file. Downloads of helm stay in
    the shared `~/.cache/tfgen`: they are read, never emptied."""
    key = tmp_path_factory.mktemp("machine-cache") / "key"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TFGEN_CACHE_KEY_FILE", str(key))
        yield


@pytest.fixture(scope="session")
def hostile_session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The repository copies every hostile case starts from (`hostile_corpus.new_session`)."""
    return new_session(tmp_path_factory)


@pytest.fixture(scope="session")
def corpus(request: pytest.FixtureRequest, hostile_session: Session,
           tmp_path_factory: pytest.TempPathFactory) -> Records:
    """The hostile corpus run once for the whole pytest run: each case test_hostile.py selected,
    and the gate's verdicts of each case test_validate_gate.py selected. Under xdist the first
    worker to need it runs it (its pool uses every core) and the others read its records; that
    worker's figures (time and memory per case) go to the session's summary."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _run_corpus(request, hostile_session)
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's own
    with open(shared / "hostile-corpus.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even on a failure
        done = shared / "hostile-corpus.pickle"
        if done.exists():
            records: Records = pickle.loads(done.read_bytes())
            return records
        records = _run_corpus(request, hostile_session)
        (shared / "hostile-corpus.part").write_bytes(pickle.dumps(records))
        (shared / "hostile-corpus.part").rename(done)
        return records


def _run_corpus(request: pytest.FixtureRequest, session: Session) -> Records:
    records = run_corpus(selected(request.session, "test_case"),
                         selected(request.session, "test_check_finds_nothing_validate_missed"),
                         session)
    stash = request.config.stash.setdefault(HOSTILE_RECORDS, [])
    for path, outcome in records.outcomes.items():
        if isinstance(outcome, Outcome):
            stash.append(HostileRecord(case_id(path), outcome.seconds, outcome.max_rss_kib,
                                       not outcome.problems))
    return records


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing against them",
    )


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run should rewrite golden files rather than compare with them."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def runner() -> CliRunner:
    """The one CLI runner of the suite; tests invoke with `catch_exceptions=False`, so a bug
    shows its traceback instead of an exit code."""
    return CliRunner()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    left_out = config.stash.get(LEFT_OUT, {})
    if left_out:
        said = [f"{count} that need {NEEDS[name]}" if name in NEEDS else f"{count} other(s)"
                for name, count in sorted(left_out.items())]
        terminalreporter.write_line(f"left out: {', '.join(said)} (`make test` runs them)")
    # The hostile corpus's figures (time and memory per case) are a report, not assertions.
    lines = hostile_summary(config.stash.get(HOSTILE_RECORDS, []))
    if lines:
        terminalreporter.section("hostile corpus")
        for line in lines:
            terminalreporter.write_line(line)
