"""Output and input sizes that must stay linear: `tfgen explain --format json` of a TFJob of
2,001 pods, and `tfgen import` of a `kubectl get -o yaml` List of tens of megabytes (the
walkthrough's TFJob, PV, PVC and TensorBoard among thousands of pods, as a busy namespace's
dump holds them). Prints bytes, seconds and the tfgen process's peak RSS (from wait4)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TFGEN = [sys.executable, "-m", "tfgen"]

SPEC = """\
apiVersion: tfgen.io/v1
kind: Experiment
metadata: {name: big, namespace: default, owner: someone@example.com}
spec:
  image: example.com/train:1
  roles:
    chief: {replicas: 1}
    worker: {replicas: 1000}
    ps: {replicas: 1000}
  storage: {existingClaim: shared, mountPath: /data}
  tensorboard: {enabled: false}
"""


def measure(args: list[str], cwd: Path, out: Path) -> tuple[float, int, int]:
    """(seconds, peak RSS in KiB, exit code) of tfgen with `args`, its output in `out`."""
    with open(out, "wb") as handle:
        start = time.monotonic()
        process = subprocess.Popen([*TFGEN, *args], cwd=cwd, stdout=handle,
                                   stderr=subprocess.STDOUT, env=os.environ.copy())
        _, status, usage = os.wait4(process.pid, 0)
    return time.monotonic() - start, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def pod(index: int) -> dict[str, object]:
    """A pod as `kubectl get -o yaml` prints one (abridged, a few kilobytes)."""
    name = f"web-{index:06d}"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                         "annotations": {"note": "x" * 1500}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                     "env": [{"name": f"V{i}", "value": str(i)}
                                             for i in range(20)]}]},
            "status": {"phase": "Running", "podIP": f"10.0.{index // 250}.{index % 250}"}}


def import_list(folder: Path, megabytes: int) -> Path:
    """A TFJob and its storage, from the import fixtures, among pods up to `megabytes`."""
    fixtures = ROOT / "tests" / "fixtures" / "import"
    items = [d for name in ("jobs/v1.yaml", "storage/csi.yaml")
             for d in yaml.safe_load_all((fixtures / name).read_text()) if d]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items},
                          sort_keys=False)
    per_pod = len(yaml.safe_dump([pod(0)]))
    pods = yaml.safe_dump([pod(i) for i in range(megabytes * 2**20 // per_pod)],
                          sort_keys=False)
    head, _, tail = text.partition("items:\n")
    path = folder / "dump.yaml"
    path.write_text(head + "items:\n" + pods + tail)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=40)
    parser.add_argument("--write-dump", metavar="FOLDER", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.write_dump:
        import_list(Path(options.write_dump), options.megabytes)
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "big.yaml").write_text(SPEC)
        seconds, peak, code = measure(["explain", "big.yaml", "--format", "json"], folder,
                                      folder / "explain.json")
        size = (folder / "explain.json").stat().st_size
        print(f"explain --format json, 2,001 pods: {size:,} bytes, {seconds:.2f} s, "
              f"peak RSS {peak / 1024:.0f} MiB, exit {code}")
        # written by a child of its own: the tfgen process measured next is forked from this
        # one, and a fork's peak RSS starts at its parent's
        dump = folder / "dump.yaml"
        subprocess.run([sys.executable, __file__, "--write-dump", str(folder),
                        "--megabytes", str(options.megabytes)], check=True)
        seconds, peak, code = measure(["import", str(dump)], folder, folder / "import.txt")
        left = (folder / "import.txt").read_text().count("not imported")
        print(f"import of a {dump.stat().st_size / 2**20:.1f} MiB List: {seconds:.2f} s, "
              f"peak RSS {peak / 1024:.0f} MiB, exit {code}, {left:,} objects listed as "
              "not imported")


if __name__ == "__main__":
    main()
