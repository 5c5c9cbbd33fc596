"""Speed and memory benchmark of tfgen: `python bench/bench.py --sizes 1000,5000,10000`.

For each size N, builds a repository of N experiments in a temporary folder (`recipes.py`:
`--recipe varied`, N varied specs, or `--recipe walkthrough`, N copies of the walkthrough's
experiment as `tfgen new --from` writes them) and measures, in one run, side by side, a growth
table (one row per size and command):

- `tfgen render` with every file new, then again with every file unchanged (specs/s),
- `tfgen check` cold (empty .tfgen-cache/), warm (nothing changed), one experiment changed
  (its spec edited and re-rendered first, the render not timed), one experiment added (a copy
  under a new name, rendered first: what most pull requests do); the last three REPEATS times
  each (another experiment each time), the run of median wall time reported,
- helm alone: the helm processes `tfgen check` starts for a cold check (the same umbrella
  charts, the same batches, the same number in parallel, the same environment), written
  beforehand, only helm timed (wall time and CPU: the cold check's CPU less helm's is
  tfgen's own, and cold / helm alone cannot be below 1 + tfgen's / helm's while helm keeps
  every core busy); then the same processes with Go's default garbage collector (as a script
  runs helm; tfgen sets its own, `gate/helm/command.py`).

And, at the sizes given to `--peers-at`, the gates a user would script with the same tools:

- sequential: per experiment `helm template`, then `kubernetes-validate` on its output,
- parallel: `helm template` per experiment on every core, then one `kubernetes-validate`
  run over all of the output;

each measured on `--peer-sample` experiments and extrapolated to N (said so in the output).

`--helm PATH` (repeatable) names the helms to check with: each runs the check rows on the same
repository, one after the other, and with more than one a second table puts their cold, warm,
one-changed and one-added checks side by side.

Every tfgen command runs through `traced.py`, which splits its CPU into tfgen's own and its
helm processes' and records each helm process (CPU, peak RSS, experiments rendered). Wall time
per command and the peak resident memory of the tfgen process (from wait4) are printed as a
Markdown table, then the curve: per helm and size, the cold check's wall time, tfgen's and
helm's CPU apart, the helm processes and their batches, helm alone and the ratio, warm, one
changed and peak RSS, and the figures the gate's targets are stated in. This is a benchmark,
not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from recipes import EDITS, RECIPES, build, experiment_name
from tfgen.repo import runtimes
from tfgen.words import counted

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TRACED = Path(__file__).resolve().parent / "traced.py"
TFGEN_BIN = os.environ.get("TFGEN_BIN", str(BIN / "tfgen"))
KUBERNETES_VALIDATE = str(BIN / "kubernetes-validate")

REPEATS = 3  # runs of the warm and one-changed checks; the median is reported


def interpreter(program: str) -> str:
    """The Python that runs the tfgen script `program` (its `#!` line): the launcher
    (`traced.py`) runs tfgen in that Python, so TFGEN_BIN still names the tfgen measured."""
    first = Path(program).read_bytes().split(b"\n", 1)[0]
    return first[2:].decode().strip() if first.startswith(b"#!") else sys.executable


class Measured(NamedTuple):
    """One command: wall seconds, peak RSS in MB, CPU seconds (its helm processes included:
    on a shared machine they vary less than wall time), what it printed, and what the
    launcher recorded (`traced.py`): tfgen's own CPU, and each helm process."""

    wall: float
    rss: float
    cpu: float
    output: str
    traced: dict[str, Any]

    @property
    def tfgen_cpu(self) -> float:
        return float(self.traced.get("tfgen_cpu", 0.0))

    @property
    def helms(self) -> list[dict[str, Any]]:
        return list(self.traced.get("helms", []))

    @property
    def helm_cpu(self) -> float:
        return sum(helm["cpu"] for helm in self.helms)

    @property
    def helm_rss(self) -> float:
        """The largest helm process's own peak RSS, MB (`traced.py`)."""
        return max((helm["rss_kb"] for helm in self.helms), default=0) / 1024

    @property
    def disk(self) -> str:
        """What the disk read and wrote for the command (`traced.py`), MB."""
        read, written = (self.traced.get(what, 0) * 512 / 2**20
                         for what in ("blocks_read", "blocks_written"))
        return f"disk read {read:.0f} MB, written {written:.0f} MB"

    @property
    def batches(self) -> str:
        """The helm processes by experiments rendered: `66 x 150, 1 x 100, 1 x 0`."""
        sizes = Counter(helm["experiments"] for helm in self.helms)
        return ", ".join(f"{count} x {size}" for size, count in
                         sorted(sizes.items(), reverse=True)) or "none"

    def cpu_and(self, text: str) -> str:
        return f"{self.cpu:.1f} s CPU; {text}"

    @property
    def summary(self) -> str:
        """The CPU seconds and the command's last line (tfgen's summary)."""
        return self.cpu_and(self.output.strip().splitlines()[-1])


def run(args: list[str], cwd: Path, *, check: bool = True) -> Measured:
    """One tfgen command, measured (`Measured`) through the launcher."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "traced.json"
        cmd = [interpreter(TFGEN_BIN), str(TRACED), str(record), *args]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        output = proc.stdout.read().decode(errors="replace")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        traced = json.loads(record.read_text()) if record.exists() else {}
    if check and proc.returncode not in (0, 1):
        raise SystemExit(f"tfgen {' '.join(args)} failed ({proc.returncode}):\n{output[-3000:]}")
    if check and proc.returncode == 1 and args[0] == "check":
        print(output[-3000:], file=sys.stderr)
        raise SystemExit("tfgen check found problems in the generated experiments")
    return Measured(wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, output,
                    traced)


def peer_sequential(root: Path, names: list[str], kube: str, helm: str) -> float:
    """Seconds for the sequential scripted gate over `names`: helm template, then
    kubernetes-validate, one experiment after the other."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out = Path(tmp) / f"{name}.yaml"
            helm_template(root, name, kube, helm, out)
            validate_files([out], kube)
    return time.perf_counter() - start


def peer_parallel(root: Path, names: list[str], kube: str, helm: str) -> float:
    """Seconds for the parallel scripted gate over `names`: helm template per experiment on
    every core, then one kubernetes-validate run over every output file."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"{name}.yaml" for name in names]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(lambda name, out: helm_template(root, name, kube, helm, out),
                          names, outs))
        validate_files(outs, kube)
    return time.perf_counter() - start


def helm_template(root: Path, name: str, kube: str, helm: str, out: Path) -> None:
    values = root / "argo" / "experiments" / name / "values.yaml"
    with open(out, "w") as handle:
        subprocess.run([helm, "template", name, str(root / "charts/tfjob-experiment"),
                        "-f", str(values), "--kube-version", kube,
                        "--api-versions", "kubeflow.org/v1"], stdout=handle, check=True)


def validate_files(paths: list[Path], kube: str) -> None:
    subprocess.run([KUBERNETES_VALIDATE, "--strict", "--quiet", "--no-warn", "-k", kube,
                    *map(str, paths)], stdout=subprocess.DEVNULL, check=False)


def helm_alone(root: Path, kube: str, helm: str, tfgens_env: bool) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, processes) of the helm processes a cold `tfgen check`
    starts: the batches are cut and their umbrella charts written as the check does, then only
    helm is timed, in the environment the check gives helm (`tfgens_env`) or in Go's
    defaults."""
    from tfgen.gate.argo.applications import resolve_applications
    from tfgen.gate.helm.batch import BatchRenderer
    from tfgen.gate.helm.command import GC_SETTINGS, environment
    from tfgen.gate.helm.jobs import jobs_for
    from tfgen.gate.helm.values import files_merged

    renderer = BatchRenderer(helm=helm)
    jobs = jobs_for(resolve_applications(root).applications, kube)
    chart = renderer.chart(jobs[0].chart)
    size = renderer.batch_size(len(jobs))
    commands = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, first in enumerate(range(0, len(jobs), size)):
            chunk = jobs[first:first + size]
            values = [renderer.over_defaults(files_merged(job.values_files), chart) or {}
                      for job in chunk]
            folder = Path(tmp) / str(number)
            folder.mkdir()
            commands.append(renderer.umbrella_command(folder, values, chart, chunk[0].namespace,
                                                      kube, chunk[0].api_versions))
        env = environment() if tfgens_env else {
            name: value for name, value in os.environ.items() if name not in GC_SETTINGS}
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        with ThreadPoolExecutor(max_workers=renderer.workers) as pool:
            list(pool.map(lambda cmd: subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True,
                                                     env=env), commands))
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return wall, cpu, len(commands)


Row = tuple[int, str, str, float, float | None, str]  # N, helm, what, wall, RSS, note
# The rows the side-by-side table compares across helms.
COMPARED = ("tfgen check, cold (empty cache)", "tfgen check, warm (nothing changed)",
            "tfgen check, one experiment changed", "tfgen check, one experiment added")


class Helm(NamedTuple):
    """A helm to measure: its path, and its name in the tables (release, where it is)."""

    path: str
    name: str


def median(runs: list[Measured]) -> Measured:
    """The run of median wall time: the rows that take a second or so are measured REPEATS
    times, as one run of them says more about the machine's moment than about tfgen."""
    return sorted(runs, key=lambda measured: measured.wall)[len(runs) // 2]


class Curve(NamedTuple):
    """What the curve table and the targets read of one size with one helm."""

    cold: Measured
    helm_alone: float  # wall seconds
    helm_alone_cpu: float
    warm: Measured
    changed: Measured


def measure(n: int, args: argparse.Namespace, helms: list[Helm],
            add: Callable[[Row], None], curve: dict[tuple[str, int], Curve]) -> None:
    """Every row of one size, in a repository of its own (removed unless --keep): the renders,
    then the checks with each helm in turn, then the scripted peers (with the first helm)."""
    tmp = Path(tempfile.mkdtemp(prefix="tfgen-bench-"))
    root = tmp / "repo"
    root.mkdir()
    try:
        build(root, n, args.recipe, args.seed, args.sweeps, args.runtime)
        read_version = (
            "import yaml,sys;print(yaml.safe_load(open(sys.argv[1]))['kubernetesVersion'])"
        )
        kube = subprocess.run([sys.executable, "-c", read_version, str(root / "tfgen.yaml")],
                              capture_output=True, text=True, check=True).stdout.strip()
        for what in ("tfgen render, all files new", "tfgen render, all files unchanged"):
            render = run(["render"], root)
            add((n, "", what, render.wall, render.rss,
                 render.cpu_and(f"{n / render.wall:,.0f} specs/s")))
        for number, helm in enumerate(helms):
            curve[(helm.name, n)] = measure_checks(root, n, kube, helm, number, args, add)
        if n in args.peers_at:
            names = [experiment_name(index) for index in range(n)]  # not those added
            sample = names[:args.peer_sample] if args.peer_sample > 0 else names
            for what, peer in (("sequential", peer_sequential), ("parallel", peer_parallel)):
                seconds = peer(root, sample, kube, helms[0].path)
                note = (f"measured on all {len(names)}" if len(sample) == len(names) else
                        f"{seconds:.1f} s for {len(sample)}, extrapolated to {len(names)}")
                add((n, helms[0].name, f"scripted peer, {what}",
                     seconds / len(sample) * len(names), None, note))
        if args.keep:
            print(f"repository for N={n} kept at {root}", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def cold_and_alone(root: Path, kube: str, helm: Helm, runs: int
                   ) -> tuple[Measured, tuple[float, float, int], str]:
    """The cold check and helm alone, `runs` times each, one after the other (on a shared
    machine the two then see the same moments): the run of median wall time of each, and
    what the others gave."""
    colds, alones = [], []
    for _ in range(runs):
        shutil.rmtree(root / ".tfgen-cache", ignore_errors=True)
        colds.append(run(["check"], root))
        alones.append(helm_alone(root, kube, helm.path, tfgens_env=True))
    alones.sort()
    cold = median(colds)
    others = "" if runs == 1 else (
        f"; of {runs} runs each, cold {', '.join(f'{c.wall:.2f}' for c in colds)} s and helm "
        f"alone {', '.join(f'{a[0]:.2f}' for a in alones)} s: the medians")
    return cold, alones[len(alones) // 2], others


def measure_checks(root: Path, n: int, kube: str, helm: Helm, number: int,
                   args: argparse.Namespace, add: Callable[[Row], None]) -> Curve:
    """The check rows with one helm (the `number`-th: it edits and adds experiments of its
    own), from an empty cache: what the renders remembered is not there in CI either."""
    os.environ["TFGEN_HELM"] = helm.path  # the generated repositories have no .tools/
    (cold, (seconds, helm_cpu, processes), others) = cold_and_alone(root, kube, helm,
                                                                    args.cold_runs)
    add((n, helm.name, "tfgen check, cold (empty cache)", cold.wall, cold.rss,
         cold.cpu_and(f"tfgen {cold.tfgen_cpu:.1f} s, helm {cold.helm_cpu:.1f} s; helm "
                      f"processes {cold.batches} experiments, each at most "
                      f"{cold.helm_rss:.0f} MB; {cold.disk}; "
                      + cold.output.strip().splitlines()[-1])))
    # With both cores busy, the cold check takes at least (helm's + tfgen's) / cores, so
    # cold / helm alone is at least 1 + tfgen's / helm's.
    own = cold.tfgen_cpu
    add((n, helm.name, "helm alone, batched as the cold check does", seconds, None,
         f"{helm_cpu:.1f} s CPU, {counted(processes, 'helm process', 'helm processes')}; "
         f"cold check / helm alone = {cold.wall / seconds:.2f}; per experiment, helm "
         f"{helm_cpu / n * 1000:.1f} ms CPU and tfgen {own / n * 1000:.1f} ms: floor "
         f"{1 + own / helm_cpu:.2f} (1 + tfgen's / helm's){others}"))
    alone = Curve(cold, seconds, helm_cpu, cold, cold)
    seconds, _, _ = helm_alone(root, kube, helm.path, tfgens_env=False)
    add((n, helm.name, "helm alone, the same with Go's default collector", seconds, None,
         f"cold check / this = {cold.wall / seconds:.2f}"))
    warm = median([run(["check"], root) for _ in range(REPEATS)])
    add((n, helm.name, "tfgen check, warm (nothing changed)", warm.wall, warm.rss,
         warm.summary))
    old, new = EDITS[args.recipe]

    def one_changed(index: int) -> Measured:
        changed = root / "experiments" / f"{experiment_name(index)}.yaml"
        changed.write_text(changed.read_text().replace(old, new))
        run(["render"], root)
        return run(["check"], root)

    first = number * REPEATS  # each helm its own experiments to change and to copy
    changed = median([one_changed(first + index) for index in range(REPEATS)])
    add((n, helm.name, "tfgen check, one experiment changed", changed.wall, changed.rss,
         changed.summary))

    def one_added(index: int) -> Measured:
        # a copy of an experiment under a new name (its log folder and NAS path follow)
        source, name = experiment_name(index), experiment_name(index, "added")
        text = (root / "experiments" / f"{source}.yaml").read_text()
        (root / "experiments" / f"{name}.yaml").write_text(text.replace(source, name))
        run(["render"], root)
        return run(["check"], root)

    added = median([one_added(first + index) for index in range(REPEATS)])
    add((n, helm.name, "tfgen check, one experiment added", added.wall, added.rss,
         added.summary))
    return alone._replace(warm=warm, changed=changed)


def curve_table(curve: dict[tuple[str, int], Curve], helms: list[Helm]) -> str:
    """Per helm and size: the cold check's wall time with tfgen's and helm's CPU apart, its
    helm processes, helm alone and the ratio, warm, one changed, peak RSS; then the figures
    the gate's targets are stated in, at the largest size against the smallest."""
    lines = ["", "| helm | N | cold | tfgen CPU (per exp.) | helm CPU (per exp.) | helm "
             "processes x experiments | largest helm RSS | helm alone | cold / helm alone "
             "| warm | one changed | peak RSS |",
             "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for helm in helms:
        sizes = sorted(n for name, n in curve if name == helm.name)
        for n in sizes:
            c = curve[(helm.name, n)]
            rss = max(c.cold.rss, c.warm.rss, c.changed.rss)
            lines.append(
                f"| {helm.name} | {n:,} | {c.cold.wall:.2f} s | {c.cold.tfgen_cpu:.1f} s "
                f"({c.cold.tfgen_cpu / n * 1000:.2f} ms) | {c.cold.helm_cpu:.1f} s "
                f"({c.cold.helm_cpu / n * 1000:.2f} ms) | {c.cold.batches} | "
                f"{c.cold.helm_rss:.0f} MB | {c.helm_alone:.2f} s | "
                f"{c.cold.wall / c.helm_alone:.2f} | {c.warm.wall:.2f} s | "
                f"{c.changed.wall:.2f} s | {rss:.0f} MB |")
    lines.append("")
    for helm in helms:
        sizes = sorted(n for name, n in curve if name == helm.name)
        small, large = curve[(helm.name, sizes[0])], curve[(helm.name, sizes[-1])]
        growth = (f"cold at {sizes[-1]:,} / at {sizes[0]:,} = "
                  f"{large.cold.wall / small.cold.wall:.2f} for {sizes[-1] / sizes[0]:.1f}x "
                  "the experiments (target for 10,000 / 2,000: at most 5.5); "
                  if len(sizes) > 1 else "")
        lines.append(
            f"- {helm.name} at {sizes[-1]:,}: {growth}cold / helm alone = "
            f"{large.cold.wall / large.helm_alone:.2f} (target 1.3; floor "
            f"{1 + large.cold.tfgen_cpu / large.helm_alone_cpu:.2f} = 1 + tfgen's CPU / helm "
            f"alone's); warm {large.warm.wall:.2f} s (target 0.5 s); one changed "
            f"{large.changed.wall:.2f} s (target 1 s); peak RSS "
            f"{max(large.cold.rss, large.warm.rss, large.changed.rss):.0f} MB (target 300 MB)")
    return "\n".join(lines)


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes, default=[1000, 5000, 10000],
                        help="comma-separated numbers of experiments, one growth-table block "
                             "each (default 1000,5000,10000)")
    parser.add_argument("--helm", action="append", metavar="PATH",
                        help="a helm to check with (repeat for several: each measured on the "
                             "same repository, one after the other; default: the one tfgen "
                             "finds, $TFGEN_HELM, .tools/ or PATH)")
    parser.add_argument("--peers-at", type=sizes, default=[1000],
                        help="sizes at which the scripted peers are measured (default 1000)")
    parser.add_argument("--peer-sample", type=int, default=100,
                        help="experiments each peer runs (extrapolated to N; 0 = all N)")
    parser.add_argument("--sweeps", type=float, default=0.1,
                        help="fraction of the experiments (of those with a TensorBoard) that "
                             "are sweeps of 6 or 4 runs (default 0.1; 0 for none)")
    parser.add_argument("--recipe", choices=RECIPES, default="varied",
                        help="varied: N varied specs (default); walkthrough: N copies of the "
                             "walkthrough's experiment, as `tfgen new --from` writes them")
    parser.add_argument("--cold-runs", type=int, default=1, metavar="K",
                        help="cold checks and helm-alone runs per size and helm, alternated; "
                             "the medians are reported (default 1; 3 on a shared machine)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runtime", choices=[r.name for r in runtimes.RUNTIMES],
                        help="every experiment on this runtime (the same experiments for each; "
                             "default: none named, the namespace's)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary repositories")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "generator"))
    helms = [helm_named(path) for path in args.helm or [None]]
    if len({helm.name for helm in helms}) < len(helms):
        parser.error("--helm: each helm once (two of them report the same release)")
    # tfgen measured as installed: with its bytecode written (once, by this first run) and
    # read by every measured run, not compiled again by each
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    run(["--version"], REPO)
    rows: list[Row] = []
    curve: dict[tuple[str, int], Curve] = {}

    def add(row: Row) -> None:
        rows.append(row)
        n, helm, what, wall, _, _ = row
        print(f"N={n} {helm} {what}: {wall:.2f} s", file=sys.stderr)  # the tables at the end

    for n in args.sizes:
        measure(n, args, helms, add, curve)
    print(f"\n{os.cpu_count()} CPUs; recipe {args.recipe}; "
          + "; ".join(f"{h.name}: {h.path}" for h in helms) + "\n")
    print("| N | helm | what | wall time | peak RSS | note |\n"
          "| ---: | --- | --- | ---: | ---: | --- |")
    for n, helm, what, wall, rss, note in rows:
        print(f"| {n:,} | {helm} | {what} | {wall:.2f} s | {f'{rss:.0f} MB' if rss else '-'} "
              f"| {note} |")
    if len(helms) > 1:
        print(side_by_side(rows, helms))
    print(curve_table(curve, helms))


def helm_named(path: str | None) -> Helm:
    """The helm at `path` (None: the one tfgen finds) with the release it reports."""
    from tfgen.gate.helm.command import find_helm, identify
    from tfgen.repo.cache import Cache

    found = find_helm(root=REPO) if path is None else os.path.abspath(path)
    helm = identify(found, Cache(None))
    return Helm(found, helm.version.partition("+")[0] + ("" if helm.pinned else " (a script)"))


def side_by_side(rows: list[Row], helms: list[Helm]) -> str:
    """The checks of each size with each helm in a column: wall time, peak RSS and the ratio
    to the first helm's wall time."""
    got = {(n, helm, what): (wall, rss) for n, helm, what, wall, rss, _ in rows}
    lines = ["", "| N | check | " + " | ".join(h.name for h in helms) + " |",
             "| ---: | --- |" + " ---: |" * len(helms)]
    for n in sorted({row[0] for row in rows}):
        for what in COMPARED:
            first = got[(n, helms[0].name, what)][0]
            cells = []
            for helm in helms:
                wall, rss = got[(n, helm.name, what)]
                cells.append(f"{wall:.2f} s / {rss or 0:.0f} MB"
                             + (f" ({wall / first:.2f})" if helm != helms[0] else ""))
            lines.append(f"| {n:,} | {what.removeprefix('tfgen check, ')} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
