"""Speed benchmark of the pull-request gate: `python bench/bench.py --n 1000`.

Copies the repository's chart, schemas and tfgen.yaml (without its team `policy`) into a
temporary folder, generates N varied experiment specs there (roles, GPUs, storage drivers,
existing claims, TensorBoard on/off/ingress, namespaces), and measures in one run, side by side:

- `tfgen render`                      (specs/s),
- `tfgen check` cold                  (empty .tfgen-cache/),
- `tfgen check` warm                  (nothing changed since the last run),
- `tfgen check` with one experiment changed (its spec edited and re-rendered),
- the naive gate: per experiment `helm template`, then the `kubernetes-validate` command,
  sequentially; measured on a sample of experiments and extrapolated to N (said so in the
  output).

Wall time per command and the peak resident memory of the tfgen process (from wait4) are
printed as a Markdown table. This is a benchmark, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TFGEN = os.environ.get("TFGEN_BIN", str(BIN / "tfgen"))
KUBERNETES_VALIDATE = str(BIN / "kubernetes-validate")

NAMESPACES = ["default", "ml-team"]
IMAGES = ["tensorflow/tensorflow:2.16.1-gpu", "tensorflow/tensorflow:2.16.1",
          "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/tf-mnist-distributed:gpu"]


def spec(index: int, rng: random.Random) -> str:
    """One experiment spec; the variety covers every chart branch the real repo uses."""
    name = f"bench-{index:05d}"
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
    return (
        "# yaml-language-server: $schema=../schemas/experiment.schema.json\n"
        "apiVersion: tfgen.io/v1\nkind: Experiment\n"
        f"metadata:\n  name: {name}\n  namespace: {ns}\n  owner: team-{index % 13}@example.com\n"
        f"spec:\n  image: {rng.choice(IMAGES)}\n  command: [python, /app/train.py]\n"
        f"  args: [--log_dir={mount}/logs/{name}, --steps={rng.randint(1, 100) * 1000}]\n"
        f"{env}"
        "  roles:\n" + "\n".join(roles) + "\n"
        f"  storage:\n{storage}    mountPath: {mount}\n"
        f"  tensorboard:\n{tensorboard}"
        f"  runPolicy: {{activeDeadlineSeconds: {rng.randint(1, 72) * 3600}}}\n"
    )


def build(root: Path, n: int, seed: int) -> None:
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
        (root / "experiments" / f"bench-{index:05d}.yaml").write_text(spec(index, rng))


def run(cmd: list[str], cwd: Path, *, check: bool = True) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB of the process, output) of one command."""
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
    return wall, usage.ru_maxrss / 1024, output


def naive(root: Path, names: list[str], kube: str, helm: str) -> float:
    """Seconds for the naive gate over `names`: helm template, then kubernetes-validate."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            values = root / "argo" / "experiments" / name / "values.yaml"
            out = Path(tmp) / f"{name}.yaml"
            with open(out, "w") as handle:
                subprocess.run([helm, "template", name, str(root / "charts/tfjob-experiment"),
                                "-f", str(values), "--kube-version", kube,
                                "--api-versions", "kubeflow.org/v1"],
                               stdout=handle, check=True)
            subprocess.run([KUBERNETES_VALIDATE, "--strict", "--quiet", "--no-warn",
                            "-k", kube, str(out)], stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="number of experiments")
    parser.add_argument("--naive-sample", type=int, default=50,
                        help="experiments the naive gate runs (extrapolated to N; 0 = all N)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the temporary repository")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "generator"))
    from tfgen.gate.helm import find_helm

    helm = find_helm(root=REPO)
    os.environ["TFGEN_HELM"] = helm  # the generated repository has no .tools/ of its own
    tmp = Path(tempfile.mkdtemp(prefix="tfgen-bench-"))
    root = tmp / "repo"
    root.mkdir()
    try:
        build(root, args.n, args.seed)
        read_version = (
            "import yaml,sys;print(yaml.safe_load(open(sys.argv[1]))['kubernetesVersion'])"
        )
        kube = subprocess.run([sys.executable, "-c", read_version, str(root / "tfgen.yaml")],
                              capture_output=True, text=True, check=True).stdout.strip()
        rows = []
        wall, rss, _ = run([TFGEN, "render"], root)
        rows.append(("tfgen render", wall, rss, f"{args.n / wall:,.0f} specs/s"))
        wall, rss, out = run([TFGEN, "check"], root)
        rows.append(("tfgen check, cold (empty cache)", wall, rss, out.strip().splitlines()[-1]))
        wall, rss, out = run([TFGEN, "check"], root)
        rows.append(("tfgen check, warm (nothing changed)", wall, rss,
                     out.strip().splitlines()[-1]))
        changed = root / "experiments" / "bench-00000.yaml"
        changed.write_text(changed.read_text().replace("--steps=", "--steps=1"))
        run([TFGEN, "render"], root)
        wall, rss, out = run([TFGEN, "check"], root)
        rows.append(("tfgen check, one experiment changed", wall, rss,
                     out.strip().splitlines()[-1]))
        names = sorted(p.name for p in (root / "argo" / "experiments").iterdir())
        sample = names if args.naive_sample <= 0 else names[:args.naive_sample]
        seconds = naive(root, sample, kube, helm)
        estimate = seconds / len(sample) * len(names)
        note = (f"measured on all {len(names)}" if len(sample) == len(names) else
                f"{seconds:.1f} s for {len(sample)}, extrapolated to {len(names)}")
        rows.append(("naive gate: helm template + kubernetes-validate, sequential", estimate,
                     None, note))
        print(f"\nN={args.n} experiments, {os.cpu_count()} CPUs, helm {helm}\n")
        print("| what | wall time | peak RSS | note |\n| --- | ---: | ---: | --- |")
        for what, wall, rss, note in rows:
            print(f"| {what} | {wall:.2f} s | {f'{rss:.0f} MB' if rss else '-'} | {note} |")
        if args.keep:
            print(f"\nrepository kept at {root}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
