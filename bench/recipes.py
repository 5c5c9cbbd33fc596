"""The repositories the benchmark measures: N experiment specs beside a copy of the
repository's chart, schemas and tfgen.yaml (without its team `policy`).

Two recipes:

- `varied`: N varied specs (master/chief/none, 1-8 workers, PS, evaluator, GPUs, CSI,
  FlexVolume or NFS NAS or an existing claim, TensorBoard off/on/with ingress, two
  namespaces, a fraction of sweeps), drawn from a seeded random stream;
- `walkthrough`: N copies of the walkthrough's experiment (`experiments/distributed-mnist.yaml`)
  as `tfgen new --from distributed-mnist` writes each: its own name and log directory, the
  copy-of annotation, everything else the same (one namespace, one NAS volume, one image).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
RECIPES = ("varied", "walkthrough")
NAMESPACES = ["default", "ml-team"]
IMAGES = ["tensorflow/tensorflow:2.16.1-gpu", "tensorflow/tensorflow:2.16.1",
          "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/tf-mnist-distributed:gpu"]
WALKTHROUGH = REPO / "experiments" / "distributed-mnist.yaml"
WALKTHROUGH_LOGS = "/training/tensorflow/logs"

# A sweep: a 3 x 2 grid or 4 zipped pairs, the two shapes `spec.sweep` takes.
SWEEPS = (
    "  sweep:\n    parameters: {lr: [0.1, 0.01, 0.001], batch: [64, 128]}\n    combine: grid\n",
    "  sweep:\n    parameters: {lr: [0.1, 0.03, 0.01, 0.003], batch: [32, 64, 128, 256]}\n"
    "    combine: zip\n",
)

# What the "one experiment changed" rows edit in a spec of each recipe: (text, replacement).
EDITS = {"varied": ("--steps=", "--steps=1"),
         "walkthrough": ("value: \"128\"", "value: \"1128\"")}


def is_sweep(index: int, fraction: float) -> bool:
    """Spread sweeps evenly over the indexes (golden-ratio steps) without drawing from the
    random stream, so that the other specs stay what they are at every --sweeps."""
    return (index * 0.6180339887) % 1 < fraction


def experiment_name(index: int, kind: str = "bench") -> str:
    """The name (and spec file stem) of the benchmark's experiment `index`: `bench` for the N
    generated ones, `added` for those the "one experiment added" row adds."""
    return f"{kind}-{index:05d}"


def varied(index: int, rng: random.Random, sweeps: float = 0.0, runtime: str | None = None
           ) -> str:
    """One varied spec; the variety covers every chart branch the real repo uses, and a
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


def walkthrough(index: int, text: str, runtime: str | None = None) -> str:
    """Copy `index` of the walkthrough's spec `text`, as `tfgen new --from` writes it: the
    name, the log directory (and the arg that names it) its own, the copy-of annotation."""
    name = experiment_name(index)
    if text.count(WALKTHROUGH_LOGS) != 2 or "name: distributed-mnist\n" not in text:
        raise SystemExit(f"{WALKTHROUGH} no longer reads as bench/recipes.py copies it")
    copy = text.replace("name: distributed-mnist\n", f"name: {name}\n  annotations: "
                        "{tfgen.io/copy-of: distributed-mnist}\n", 1)
    copy = copy.replace(WALKTHROUGH_LOGS, f"{WALKTHROUGH_LOGS}/{name}")
    return copy + (f"  runtime: {runtime}\n" if runtime else "")


def build(root: Path, n: int, recipe: str, seed: int, sweeps: float,
          runtime: str | None = None) -> None:
    """The repository of N experiments of `recipe` at `root`."""
    for part in ("charts", "schemas"):
        shutil.copytree(REPO / part, root / part)
    # The bundled team policy (a 16-GPU quota, two registries) would refuse most of N random
    # specs; the benchmark measures the gate, so its copy of tfgen.yaml has no `policy` section.
    config = yaml.safe_load((REPO / "tfgen.yaml").read_text(encoding="utf-8"))
    config.pop("policy", None)
    (root / "tfgen.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    rng = random.Random(seed)
    source = WALKTHROUGH.read_text(encoding="utf-8")
    (root / "experiments").mkdir()
    for index in range(n):
        text = (varied(index, rng, sweeps, runtime) if recipe == "varied"
                else walkthrough(index, source, runtime))
        (root / "experiments" / f"{experiment_name(index)}.yaml").write_text(text)
