"""Speed and memory benchmark of tfgen: `python bench/bench.py --sizes 1000,5000,10000`.

For each size N, copies the repository's chart, schemas and tfgen.yaml (without its team
`policy`) into a temporary folder, generates N varied experiment specs there (roles, GPUs,
storage drivers, existing claims, TensorBoard on/off/ingress, namespaces), and measures, in one
run, side by side, a growth table (one row per size and command):

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

Wall time per command and the peak resident memory of the tfgen process (from wait4) are
printed as a Markdown table. This is a benchmark, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import yaml
from tfgen.repo import runtimes
from tfgen.words import counted

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TFGEN = os.environ.get("TFGEN_BIN", str(BIN / "tfgen"))
KUBERNETES_VALIDATE = str(BIN / "kubernetes-validate")

REPEATS = 3  # runs of the warm and one-changed checks; the median is reported
NAMESPACES = ["default", "ml-team"]
IMAGES = ["tensorflow/tensorflow:2.16.1-gpu", "tensorflow/tensorflow:2.16.1",
          "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/tf-mnist-distributed:gpu"]


# A sweep: a 3 x 2 grid or 4 zipped pairs, the two shapes `spec.sweep` takes.
SWEEPS = (
    "  sweep:\n    parameters: {lr: [0.1, 0.01, 0.001], batch: [64, 128]}\n    combine: grid\n",
    "  sweep:\n    parameters: {lr: [0.1, 0.03, 0.01, 0.003], batch: [32, 64, 128, 256]}\n"
    "    combine: zip\n",
)


def is_sweep(index: int, fraction: float) -> bool:
    """Spread sweeps evenly over the indexes (golden-ratio steps) without drawing from the
    random stream, so that the other specs stay what they are at every --sweeps."""
    return (index * 0.6180339887) % 1 < fraction


def experiment_name(index: int, kind: str = "bench") -> str:
    """The name (and spec file stem) of the benchmark's experiment `index`: `bench` for the N
    generated ones, `added` for those the "one experiment added" row adds."""
    return f"{kind}-{index:05d}"


def spec(
    index: int, rng: random.Random, sweeps: float = 0.0, runtime: str | None = None
) -> str:
    """One experiment spec; the variety covers every chart branch the real repo uses, and a
    fraction `sweeps` of them (those with a TensorBoard) are sweeps. With a `runtime`, every
    spec names it, and those without a chief or master succeed when all workers do (the rule
    both runtimes take at any Kubernetes version), so two runtimes run the same experiments."""
    name = experiment_name(index)
    ns = NAMESPACES[index % len(NAMESPACES)]
    leader = rng.choice(["master", "chief", None])
    gpus = rng.choice([0, 1, 2])
    roles = []
    if leader:
        roles.append(f"    {leader}: {{replicas: 1, gpus: {gpus}, cpu: \"2\", memory: 8Gi}}")
    roles.append(f"    worker: {{replicas: {rng.randint(1, 8)}, gpus: {gpus}, "
                 f"cpu: \"{rng.choice([2, 4, 8])}\", memory: {rng.choice([4, 8, 16])}Gi}}")
    if rng.random() < 0.7:
        roles.append(f"    ps: {{replicas: {rng.randint(1, 4)}, cpu: \"2\", memory: 4Gi}}")
    if rng.random() < 0.2:
        roles.append("    evaluator: {replicas: 1, cpu: \"1\", memory: 2Gi}")
    mount = "/training"
    kind = rng.random()
    if kind < 0.15:
        storage = f"    existingClaim: shared-{index % 7}\n"
    else:
        driver = "csi" if kind < 0.7 else ("flexvolume" if kind < 0.85 else "nfs")
        storage = (f"    nas:\n      driver: {driver}\n      path: /exp/{name}\n"
                   f"      vers: \"{rng.choice(['3', '4.0'])}\"\n"
                   + ("      mode: \"755\"\n" if driver == "flexvolume" else ""))
    tb_on = rng.random() < 0.8
    tensorboard = (f"    logDir: {mount}/logs/{name}\n" if tb_on else "    enabled: false\n")
    if tb_on and rng.random() < 0.2:
        tensorboard += (f"    ingress: {{enabled: true, host: tb.example.com, className: nginx,"
                        f" pathPrefix: /tb/{name}}}\n")
    env = "" if rng.random() < 0.5 else (
        f"  env:\n    - {{name: BATCH_SIZE, value: \"{rng.choice([64, 128, 256])}\"}}\n")
    sweep = ""
    log_dir = f"{mount}/logs/{name}"
    if tb_on and is_sweep(index, sweeps):
        sweep = SWEEPS[index % len(SWEEPS)]
        log_dir = "((run.logDir)), --lr=((lr)), --batch=((batch))"
    return (
        "# yaml-language-server: $schema=../schemas/experiment.schema.json\n"
        "apiVersion: tfgen.io/v1\nkind: Experiment\n"
        f"metadata:\n  name: {name}\n  namespace: {ns}\n  owner: team-{index % 13}@example.com\n"
        f"spec:\n  image: {rng.choice(IMAGES)}\n  command: [python, /app/train.py]\n"
        f"  args: [--log_dir={log_dir}, --steps={rng.randint(1, 100) * 1000}]\n"
        f"{env}{sweep}"
        "  roles:\n" + "\n".join(roles) + "\n"
        f"  storage:\n{storage}    mountPath: {mount}\n"
        f"  tensorboard:\n{tensorboard}"
        f"  runPolicy: {{activeDeadlineSeconds: {rng.randint(1, 72) * 3600}"
        + (", successPolicy: AllWorkers" if runtime and not leader else "") + "}\n"
        + (f"  runtime: {runtime}\n" if runtime else "")
    )


def build(root: Path, n: int, seed: int, sweeps: float, runtime: str | None = None) -> None:
    for part in ("charts", "schemas"):
        shutil.copytree(REPO / part, root / part)
    # The bundled team policy (a 16-GPU quota, two registries) would refuse most of N random
    # specs; the benchmark measures the gate, so its copy of tfgen.yaml has no `policy` section.
    config = yaml.safe_load((REPO / "tfgen.yaml").read_text(encoding="utf-8"))
    config.pop("policy", None)
    (root / "tfgen.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    rng = random.Random(seed)
    (root / "experiments").mkdir()
    for index in range(n):
        (root / "experiments" / f"{experiment_name(index)}.yaml").write_text(
            spec(index, rng, sweeps, runtime))


class Measured(NamedTuple):
    """One command: wall seconds, peak RSS in MB, CPU seconds (its helm processes included:
    on a shared machine they vary less than wall time), and what it printed."""

    wall: float
    rss: float
    cpu: float
    output: str

    def cpu_and(self, text: str) -> str:
        return f"{self.cpu:.1f} s CPU; {text}"

    @property
    def summary(self) -> str:
        """The CPU seconds and the command's last line (tfgen's summary)."""
        return self.cpu_and(self.output.strip().splitlines()[-1])


def run(cmd: list[str], cwd: Path, *, check: bool = True) -> Measured:
    """One command, measured (`Measured`)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if check and proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output[-3000:]}")
    if check and proc.returncode == 1 and cmd[1] == "check":
        print(output[-3000:], file=sys.stderr)
        raise SystemExit("tfgen check found problems in the generated experiments")
    return Measured(wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, output)


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
    from tfgen.gate.helm.batch import BatchRenderer, jobs_for
    from tfgen.gate.helm.command import GC_SETTINGS, environment
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


def measure(n: int, args: argparse.Namespace, helms: list[Helm],
            add: Callable[[Row], None]) -> None:
    """Every row of one size, in a repository of its own (removed unless --keep): the renders,
    then the checks with each helm in turn, then the scripted peers (with the first helm)."""
    tmp = Path(tempfile.mkdtemp(prefix="tfgen-bench-"))
    root = tmp / "repo"
    root.mkdir()
    try:
        build(root, n, args.seed, args.sweeps, args.runtime)
        read_version = (
            "import yaml,sys;print(yaml.safe_load(open(sys.argv[1]))['kubernetesVersion'])"
        )
        kube = subprocess.run([sys.executable, "-c", read_version, str(root / "tfgen.yaml")],
                              capture_output=True, text=True, check=True).stdout.strip()
        for what in ("tfgen render, all files new", "tfgen render, all files unchanged"):
            render = run([TFGEN, "render"], root)
            add((n, "", what, render.wall, render.rss,
                 render.cpu_and(f"{n / render.wall:,.0f} specs/s")))
        for number, helm in enumerate(helms):
            measure_checks(root, n, kube, helm, number, add)
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


def measure_checks(root: Path, n: int, kube: str, helm: Helm, number: int,
                   add: Callable[[Row], None]) -> None:
    """The check rows with one helm (the `number`-th: it edits and adds experiments of its
    own), from an empty cache: what the renders remembered is not there in CI either."""
    os.environ["TFGEN_HELM"] = helm.path  # the generated repositories have no .tools/
    shutil.rmtree(root / ".tfgen-cache", ignore_errors=True)
    cold = run([TFGEN, "check"], root)
    add((n, helm.name, "tfgen check, cold (empty cache)", cold.wall, cold.rss, cold.summary))
    seconds, helm_cpu, processes = helm_alone(root, kube, helm.path, tfgens_env=True)
    # tfgen's own CPU: the cold check's less its helm processes' (those of helm alone).
    # With both cores busy, the cold check takes at least (helm's + tfgen's) / cores, so
    # cold / helm alone is at least 1 + tfgen's / helm's.
    own = cold.cpu - helm_cpu
    add((n, helm.name, "helm alone, batched as the cold check does", seconds, None,
         f"{helm_cpu:.1f} s CPU, {counted(processes, 'helm process', 'helm processes')}; "
         f"cold check / helm alone = {cold.wall / seconds:.2f}; per experiment, helm "
         f"{helm_cpu / n * 1000:.1f} ms CPU and tfgen {own / n * 1000:.1f} ms: floor "
         f"{1 + own / helm_cpu:.2f} (1 + tfgen's / helm's)"))
    seconds, _, _ = helm_alone(root, kube, helm.path, tfgens_env=False)
    add((n, helm.name, "helm alone, the same with Go's default collector", seconds, None,
         f"cold check / this = {cold.wall / seconds:.2f}"))
    warm = median([run([TFGEN, "check"], root) for _ in range(REPEATS)])
    add((n, helm.name, "tfgen check, warm (nothing changed)", warm.wall, warm.rss,
         warm.summary))

    def one_changed(index: int) -> Measured:
        changed = root / "experiments" / f"{experiment_name(index)}.yaml"
        changed.write_text(changed.read_text().replace("--steps=", "--steps=1"))
        run([TFGEN, "render"], root)
        return run([TFGEN, "check"], root)

    first = number * REPEATS  # each helm its own experiments to change and to copy
    changed = median([one_changed(first + index) for index in range(REPEATS)])
    add((n, helm.name, "tfgen check, one experiment changed", changed.wall, changed.rss,
         changed.summary))

    def one_added(index: int) -> Measured:
        # a copy of an experiment under a new name (its log folder and NAS path follow)
        source, name = experiment_name(index), experiment_name(index, "added")
        text = (root / "experiments" / f"{source}.yaml").read_text()
        (root / "experiments" / f"{name}.yaml").write_text(text.replace(source, name))
        run([TFGEN, "render"], root)
        return run([TFGEN, "check"], root)

    added = median([one_added(first + index) for index in range(REPEATS)])
    add((n, helm.name, "tfgen check, one experiment added", added.wall, added.rss,
         added.summary))


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
    subprocess.run([TFGEN, "--version"], check=True, stdout=subprocess.DEVNULL)
    rows: list[Row] = []

    def add(row: Row) -> None:
        rows.append(row)
        n, helm, what, wall, _, _ = row
        print(f"N={n} {helm} {what}: {wall:.2f} s", file=sys.stderr)  # the tables at the end

    for n in args.sizes:
        measure(n, args, helms, add)
    print(f"\n{os.cpu_count()} CPUs; " + "; ".join(f"{h.name}: {h.path}" for h in helms) + "\n")
    print("| N | helm | what | wall time | peak RSS | note |\n"
          "| ---: | --- | --- | ---: | ---: | --- |")
    for n, helm, what, wall, rss, note in rows:
        print(f"| {n:,} | {helm} | {what} | {wall:.2f} s | {f'{rss:.0f} MB' if rss else '-'} "
              f"| {note} |")
    if len(helms) > 1:
        print(side_by_side(rows, helms))


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
