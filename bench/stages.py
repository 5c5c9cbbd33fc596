"""Where a cold `tfgen check` spends tfgen's own CPU, stage by stage:
`python bench/stages.py --recipe walkthrough --size 2000`.

Builds a repository of N experiments (`recipes.py`) in a temporary folder, renders it, then
runs one cold check (its `.tfgen-cache/` emptied, as `bench.py`'s) in this process with each
stage's function wrapped: the CPU time of the thread that runs it (`time.thread_time`), summed
over its calls, so a stage in the render thread or a helm worker is not charged for the main
thread's work, nor for waiting on helm or on Python's global lock. A stage shown with a dash is
part of the one above it. A measurement tool, like `traced.py`: nothing in tfgen knows of it; a
stage renamed in tfgen is said, not skipped.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from recipes import RECIPES, build

# (label, module, attribute path): the stages of a cold check, in the order a check reaches
# them; "  " before a label makes it a part of the stage above.
STAGES = (
    ("the snapshot of the inputs", "tfgen.render", "Memory"),
    ("resolving the Applications", "tfgen.gate.check", "resolve_applications"),
    ("judging each batch's objects (render thread)", "tfgen.gate.objects.judging",
     "Judging._first_look"),
    ("  parsing helm's output", "tfgen.gate.objects.verdict", "parse_manifest"),
    ("  the verdict: rules and schemas", "tfgen.gate.objects.verdict", "Judge.verdict"),
    ("the helm workers' Python", "tfgen.gate.helm.batch", "BatchRenderer._render_group"),
    ("  reading the values files", "tfgen.gate.helm.batch", "files_merged"),
    ("  writing the umbrella charts", "tfgen.gate.helm.batch", "write_umbrella"),
    ("  splitting helm's output", "tfgen.gate.helm.batch", "split_umbrella"),
    ("the spec stage", "tfgen.gate.check", "validate_paths"),
    ("the drift plan", "tfgen.gate.check", "Gate.plan"),
    ("the cache's writes", "tfgen.repo.cache", "Cache.put"),
    ("the cache's flushes to disk", "tfgen.repo.cache", "Cache.flush"),
)


class Clock:
    """Thread CPU per stage, from the wrapped functions."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()

    def wrap(self, label: str, module: str, attribute: str) -> None:
        """Replace `module.attribute` by a function that times each call of it."""
        *parents, name = attribute.split(".")
        owner: Any = importlib.import_module(module)
        for parent in parents:
            owner = getattr(owner, parent)
        original = getattr(owner, name, None)
        if original is None:
            raise SystemExit(f"{module}.{attribute} is gone: name the stage anew in STAGES")

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.thread_time() - start
                self.calls[label] += 1

        setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", choices=RECIPES, default="walkthrough")
    parser.add_argument("--size", type=int, default=2000, help="experiments (default 2000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generator"))
    from tfgen.cli import main as tfgen

    def run(*words: str) -> None:
        try:
            tfgen(args=list(words), prog_name="tfgen")
        except SystemExit as exc:
            if exc.code:
                raise SystemExit(f"tfgen {' '.join(words)} exited {exc.code}") from None

    clock = Clock()
    root = Path(tempfile.mkdtemp(prefix="tfgen-stages-"))
    try:
        build(root, args.size, args.recipe, args.seed, sweeps=0.0)
        run("render", "--root", str(root))
        shutil.rmtree(root / ".tfgen-cache")  # cold: render's memories gone too
        for label, module, attribute in STAGES:
            clock.wrap(label, module, attribute)
        before, start = time.process_time(), time.perf_counter()
        run("check", "--root", str(root))
        cpu, wall = time.process_time() - before, time.perf_counter() - start
    finally:
        shutil.rmtree(root, ignore_errors=True)
    per = 1000 / args.size
    print(f"\ncold check of {args.size:,} ({args.recipe}): wall {wall:.2f} s, tfgen's CPU "
          f"{cpu:.2f} s ({cpu * per:.3f} ms per experiment, every thread)\n")
    print("| stage | CPU | ms per experiment | calls |\n| --- | ---: | ---: | ---: |")
    for label, _, _ in STAGES:
        seconds = clock.seconds[label]
        shown = "- " + label.strip() if label.startswith("  ") else label
        print(f"| {shown} | {seconds:.2f} s | {seconds * per:.3f} | {clock.calls[label]:,} |")


if __name__ == "__main__":
    main()
