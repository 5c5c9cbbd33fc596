"""tfgen installed from a wheel, not editable, into a fresh virtual environment: its schemas,
templates and chart ship as package data, so `tfgen validate`, `render --check` and `check`
work inside a copy of the repository as they do from the checkout, and `tfgen init` starts a
repository that passes `tfgen check` with no clone of this one anywhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO_ROOT, copy_repo_parts

pytestmark = pytest.mark.index  # a wheel built and installed, with its dependencies, afresh

# What building the wheel reads: the project file and everything the package links to.
SOURCES = ("pyproject.toml", "README.md", "generator", "schemas", "charts", ".github",
           ".pre-commit-hooks.yaml", "argo/README.md")


def run(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          check=False)


GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c",
       "init.defaultBranch=main")


def copy_sources(dest: Path) -> Path:
    """What building tfgen reads (SOURCES), copied from this checkout into `dest`."""
    for part in SOURCES:
        (dest / part).parent.mkdir(parents=True, exist_ok=True)
        if (REPO_ROOT / part).is_dir():
            shutil.copytree(REPO_ROOT / part, dest / part, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(REPO_ROOT / part, dest / part)
    return dest


@pytest.fixture(scope="module")
def tfgen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `tfgen` command of a fresh virtual environment holding tfgen's wheel."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    copy_sources(source)
    built = run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                work / "dist", source)
    assert built.returncode == 0, built.stderr
    [wheel] = (work / "dist").glob("tfgen_gitops-*.whl")
    venv = work / "venv"
    assert run(sys.executable, "-m", "venv", venv).returncode == 0
    installed = run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel)
    assert installed.returncode == 0, installed.stderr
    return venv / "bin" / "tfgen"


def test_the_wheel_is_what_runs(tfgen: Path) -> None:
    where = run(tfgen.parent / "python", "-c", "import tfgen.repo.resources as r; "
                "print(r.schema_dir()); print(r.chart_dir())")
    assert where.returncode == 0, where.stderr
    lines = where.stdout.split()
    assert len(lines) == 2 and all(str(tfgen.parents[1]) in line for line in lines), lines
    assert all(not Path(line).is_symlink() and Path(line).is_dir() for line in lines)


def test_the_wheel_holds_the_whole_chart(tfgen: Path) -> None:
    """Every file of the chart ships (templates/_*.tpl, README.md.gotmpl, ci/, dot files): the
    package-data globs must not leave a new file behind."""
    where = run(tfgen.parent / "python", "-c",
                "import tfgen.repo.resources as r; print(r.chart_dir())")
    assert where.returncode == 0, where.stderr
    shipped = Path(where.stdout.strip())
    chart = REPO_ROOT / "charts" / "tfjob-experiment"

    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}

    assert files(shipped) == files(chart)
    assert {"README.md.gotmpl", "templates/_names.tpl", "templates/_validate.tpl"} <= files(chart)


@pytest.mark.parametrize("command", [["validate"], ["render", "--check"], ["check"]])
def test_commands_work_in_a_copy_of_the_repository(
    tfgen: Path, tmp_path: Path, command: list[str]
) -> None:
    repo = copy_repo_parts(tmp_path / "repo")
    result = run(tfgen, *command, cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout + result.stderr, "the command says what it did"


def test_init_from_the_wheel_passes_check(tfgen: Path, tmp_path: Path) -> None:
    # The new repository lies outside this checkout and holds no helm of its own: helm comes
    # from $TFGEN_HELM, as in every other test.
    repo = tmp_path / "team"
    started = run(tfgen, "init", repo, "--repo-url", "https://github.com/acme/ml.git",
                  "--namespace", "ml", "--tfgen-source", "https://pypi.acme.example/simple/")
    assert started.returncode == 0, started.stderr
    assert "Traceback" not in started.stderr
    assert (repo / "charts" / "tfjob-experiment" / "Chart.yaml").is_file()
    assert not (repo / "charts" / "tfjob-experiment").is_symlink()
    for step in (("init", "-q"), ("add", "."), ("commit", "-qm", "start")):
        done = run(*GIT, *step, cwd=repo)
        assert done.returncode == 0, done.stderr
    checked = run(tfgen, "check", cwd=repo)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 experiments checked: all clear" in checked.stderr
