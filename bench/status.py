"""`tfgen status` over a large repository, against the lab: `python bench/status.py`.

Starts a lab of its own (scripts/lab, beside any other, stopped at the end), writes N varied
experiment specs (recipes.py's, sweeps among them) into a copy of the repository, and runs
`tfgen status --format json` there: cold (no `.tfgen-cache/`: every spec validated) and warm
(the specs remembered), each the median of three runs. Prints wall seconds, the peak RSS of
the tfgen process and the API calls it made (its JSON says how many: one list per kind and
namespace, however many experiments). A benchmark, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from recipes import build

from bench import run

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from lab import start  # noqa: E402  (scripts/ is not a package on the path)

REPEATS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000", help="comma-separated experiment counts")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    lab = start(ROOT, instance="bench-status")
    try:
        print("| experiments | runs | status cold | status warm | peak RSS | API calls |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for n in (int(size) for size in args.sizes.split(",")):
            with tempfile.TemporaryDirectory(prefix="tfgen-status-") as folder:
                root = Path(folder)
                build(root, n, "varied", args.seed, 0.1)
                # through bench.py's launcher (`traced.py`), as every measured tfgen command
                command = ["status", "--format", "json", "--kubeconfig", str(lab.kubeconfig)]
                cold = []
                for _ in range(REPEATS):
                    shutil.rmtree(root / ".tfgen-cache", ignore_errors=True)
                    cold.append(run(command, root))
                warm = sorted((run(command, root) for _ in range(REPEATS)),
                              key=lambda m: m.wall)[REPEATS // 2]
                first = sorted(cold, key=lambda m: m.wall)[REPEATS // 2]
                shown = json.loads(warm.output[warm.output.index("{"):])
                runs = sum(len(e["runs"]) for e in shown["experiments"])
                print(f"| {n:,} | {runs:,} | {first.wall:.2f} s | {warm.wall:.2f} s "
                      f"| {max(first.rss, warm.rss):.0f} MB | {shown['apiCalls']} |")
    finally:
        lab.stop()


if __name__ == "__main__":
    main()
