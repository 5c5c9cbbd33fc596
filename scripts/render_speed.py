"""Speed of `tfgen render` and `tfgen validate` on a generated repository.

    .venv/bin/python scripts/render_speed.py --n 1000 [--repeat 5]

Copies this repository's charts/, schemas/ and tfgen.yaml into a temporary folder and writes N
experiments there, varied copies of experiments/*.yaml (names, replicas, memory). Then times,
as separate processes, best of --repeat: `tfgen render` into fresh copies without argo/ (all
files new), `tfgen render` again (all files unchanged), `tfgen validate`, and a baseline
process that only starts Python and imports tfgen. Prints a Markdown table with wall time, time
beyond the baseline, specs per second beyond it and the peak resident memory (from wait4).
Numbers depend on the machine; on a shared VM take the best of several runs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TFGEN = str(Path(sys.executable).parent / "tfgen")


def _more_memory(extra: int, match: re.Match[str]) -> str:
    return f"memory: {int(match.group(1)) + extra}Gi"


def build(root: Path, n: int) -> None:
    """A repository with N experiments made from the committed ones."""
    for part in ("charts", "schemas"):
        shutil.copytree(REPO / part, root / part)
    shutil.copy2(REPO / "tfgen.yaml", root / "tfgen.yaml")
    (root / "experiments").mkdir()
    texts = [(p.stem, p.read_text()) for p in sorted((REPO / "experiments").glob("*.yaml"))]
    for i in range(n):
        stem, text = texts[i % len(texts)]
        name = f"{stem[:30]}-{i:05d}"
        body = re.sub(rf"\b{re.escape(stem)}\b", name, text)
        body = body.replace("replicas: 2", f"replicas: {2 + i % 5}")
        body = re.sub(r"memory: (\d+)Gi", partial(_more_memory, i % 3), body)
        (root / "experiments" / f"{name}.yaml").write_text(body)


def run(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one process; exits if it fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{output[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def best(cmd: list[str], cwds: list[Path]) -> tuple[float, float]:
    runs = [run(cmd, cwd) for cwd in cwds]
    return min(w for w, _ in runs), max(m for _, m in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="number of experiments")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tfgen-speed-"))
    try:
        root = tmp / "repo"
        root.mkdir()
        build(root, args.n)
        # Render into fresh copies: deleting argo/ right before a run would also time the file
        # system's deferred work for the deletion.
        copies = [shutil.copytree(root, tmp / f"cold-{i}") for i in range(args.repeat)]
        os.sync()
        base, base_rss = best([sys.executable, "-c", "import tfgen.cli, tfgen.render"],
                              [root] * args.repeat)
        rows = [("python start-up + imports", base, base_rss)]
        rows.append(("tfgen render, all files new", *best([TFGEN, "render"], copies)))
        run([TFGEN, "render"], root)
        rows.append(("tfgen render, all files unchanged",
                     *best([TFGEN, "render"], [root] * args.repeat)))
        rows.append(("tfgen validate", *best([TFGEN, "validate"], [root] * args.repeat)))
        print(f"N={args.n} experiments, {os.cpu_count()} CPUs, best of {args.repeat}\n")
        print("| what | wall | beyond start-up | specs/s beyond start-up | peak RSS |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for what, wall, rss in rows:
            rate = f"{args.n / (wall - base):,.0f}" if wall > base else "-"
            print(f"| {what} | {wall:.3f} s | {wall - base:.3f} s | {rate} | {rss:.0f} MB |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
