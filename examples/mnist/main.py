"""Distributed MNIST-shaped training that runs unchanged in every pod of a TFJob.

The training operator gives each pod a TF_CONFIG (cluster + own task); this program reads it
and plays its role:

* no TF_CONFIG: one process trains alone (a single-replica TFJob, or a laptop);
* with parameter servers: `ps` and `worker` tasks start a `tf.distribute.Server` and wait,
  the chief/master coordinates with `ParameterServerStrategy` + `ClusterCoordinator`;
* without parameter servers: chief/master and workers train together with
  `MultiWorkerMirroredStrategy` (all-reduce);
* `evaluator`: sidecar evaluation of every checkpoint the trainers write.

TensorFlow 2 only knows the task types chief, worker, ps and evaluator
(`multi_worker_util._validate_cluster_spec`); a TFJob `Master` replica appears as `master`,
so it is read as `chief`. The evaluator is removed from the training cluster: it never runs a
server, and the coordinator would otherwise try to connect to it.

Data: `<data_dir>/mnist.npz` (the Keras layout: x_train, y_train, x_test, y_test) when it is
there, otherwise synthetic MNIST-shaped data generated locally; nothing is downloaded.
Event files go under `<log_dir>/train` and `<log_dir>/eval`, checkpoints under
`<log_dir>/checkpoints`, so a TensorBoard pointed at `log_dir` shows everything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default="/training/tensorflow/input_data")
    parser.add_argument("--log_dir", default="/training/tensorflow/logs")
    parser.add_argument("--steps", type=int, default=200, help="training steps in total")
    parser.add_argument(
        "--batch_size",
        type=int,
        default=int(os.environ.get("BATCH_SIZE", "64")),
        help="per replica (default: $BATCH_SIZE, else 64)",
    )
    parser.add_argument(
        "--learning_rate",
        type=float,
        default=0.1,
        help="SGD rate; with parameter servers divided by the number of workers",
    )
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--log_every", type=int, default=20, help="steps between summaries")
    parser.add_argument("--checkpoint_every", type=int, default=100)
    parser.add_argument(
        "--eval_timeout",
        type=float,
        default=300,
        help="evaluator: seconds to wait for a new checkpoint",
    )
    return parser.parse_args(argv)


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# TF_CONFIG


def read_tf_config() -> tuple[dict[str, list[str]], str | None, int]:
    """Training cluster (master renamed chief, evaluator removed), own task type and index."""
    raw = os.environ.get("TF_CONFIG", "")
    if not raw:
        return {}, None, 0
    config = json.loads(raw)
    cluster = {k: list(v) for k, v in (config.get("cluster") or {}).items() if v}
    if "master" in cluster:
        cluster["chief"] = cluster.pop("master")
    cluster.pop("evaluator", None)
    task = config.get("task") or {}
    task_type = task.get("type")
    if task_type == "master":
        task_type = "chief"
    return cluster, task_type, int(task.get("index", 0))


# ---------------------------------------------------------------------------------------------
# Data


def load_data(data_dir: str) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    path = os.path.join(data_dir, "mnist.npz")
    if os.path.exists(path):
        with np.load(path) as f:
            train = (f["x_train"], f["y_train"])
            test = (f["x_test"], f["y_test"])
        log(f"data: {path} ({len(train[0])} training images)")
    else:
        train, test = synthetic(6000, seed=1), synthetic(1000, seed=2)
        log(f"data: no {path}; using {len(train[0])} synthetic MNIST-shaped images")
    return _prepare(*train), _prepare(*test)


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """28x28 images whose class is a fixed random pattern plus noise: learnable, tiny, offline."""
    patterns = np.random.default_rng(0).uniform(0, 255, size=(10, 28, 28))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    images = 0.35 * patterns[labels] + rng.uniform(0, 0.65 * 255, size=(n, 28, 28))
    return images.astype(np.uint8), labels.astype(np.int64)


def _prepare(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (x.reshape(len(x), 784).astype("float32") / 255.0), y.astype("int64")


# ---------------------------------------------------------------------------------------------
# Model and training step (plain tf.Module, so it works under every strategy)


def build(tf, hidden: int):  # noqa: ANN001, ANN201 - tf is imported lazily
    class MLP(tf.Module):
        def __init__(self) -> None:
            super().__init__(name="mlp")
            # MEAN aggregation: each replica's update is averaged across replicas, which is
            # gradient averaging for MultiWorkerMirroredStrategy and multi-GPU PS workers.
            mean = tf.VariableAggregation.MEAN
            init = tf.random.stateless_normal
            self.w1 = tf.Variable(init([784, hidden], seed=[1, 2], stddev=0.05), aggregation=mean)
            self.b1 = tf.Variable(tf.zeros([hidden]), aggregation=mean)
            self.w2 = tf.Variable(init([hidden, 10], seed=[3, 4], stddev=0.05), aggregation=mean)
            self.b2 = tf.Variable(tf.zeros([10]), aggregation=mean)
            self.step = tf.Variable(
                0,
                dtype=tf.int64,
                trainable=False,
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )

        def __call__(self, x):  # noqa: ANN001, ANN204
            return tf.matmul(tf.nn.relu(tf.matmul(x, self.w1) + self.b1), self.w2) + self.b2

    return MLP()


def make_step_fn(tf, model, learning_rate: float):  # noqa: ANN001, ANN201
    weights = [model.w1, model.b1, model.w2, model.b2]

    def replica_step(x, y):  # noqa: ANN001, ANN202
        with tf.GradientTape() as tape:
            logits = model(x)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        grads = tape.gradient(loss, weights)
        for var, grad in zip(weights, grads, strict=True):
            var.assign_sub(learning_rate * grad)
        model.step.assign_add(1)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        return loss, accuracy

    return replica_step


def dataset(tf, data, batch_size: int, seed: int | None = 0):  # noqa: ANN001, ANN201
    x, y = data
    return (
        tf.data.Dataset.from_tensor_slices((x, y))
        .shuffle(len(x), seed=seed)
        .repeat()
        .batch(batch_size, drop_remainder=True)
        .prefetch(2)
    )


def write_scalars(tf, writer, step: int, **scalars: float) -> None:  # noqa: ANN001
    with writer.as_default():
        for name, value in scalars.items():
            tf.summary.scalar(name, value, step=step)
    writer.flush()


# ---------------------------------------------------------------------------------------------
# Roles


def train_single(tf, args, train) -> None:  # noqa: ANN001
    model = build(tf, args.hidden)
    step_fn = tf.function(make_step_fn(tf, model, args.learning_rate))
    ckpt = tf.train.Checkpoint(model=model)
    manager = tf.train.CheckpointManager(ckpt, os.path.join(args.log_dir, "checkpoints"), 3)
    writer = tf.summary.create_file_writer(os.path.join(args.log_dir, "train"))
    iterator = iter(dataset(tf, train, args.batch_size))
    for step in range(1, args.steps + 1):
        loss, acc = step_fn(*next(iterator))
        if step % args.log_every == 0 or step == args.steps:
            write_scalars(tf, writer, step, loss=float(loss), accuracy=float(acc))
            log(f"step {step}/{args.steps} loss {float(loss):.4f} accuracy {float(acc):.3f}")
        if step % args.checkpoint_every == 0 or step == args.steps:
            manager.save(checkpoint_number=step)


def train_multi_worker(tf, args, train, cluster, task_type, task_index) -> None:  # noqa: ANN001
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_index, rpc_layer="grpc"
    )
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    # One writer of summaries and checkpoints: the chief, or worker 0 when there is none.
    leader = task_type == "chief" or ("chief" not in cluster and task_index == 0)
    out_dir = args.log_dir if leader else tempfile.mkdtemp(prefix=f"{task_type}-{task_index}-")
    global_batch = args.batch_size * strategy.num_replicas_in_sync
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = dataset(tf, train, global_batch).with_options(options)
    with strategy.scope():
        model = build(tf, args.hidden)
    replica_step = make_step_fn(tf, model, args.learning_rate)

    @tf.function
    def step_fn(iterator):  # noqa: ANN001, ANN202
        loss, acc = strategy.run(replica_step, args=next(iterator))
        mean = tf.distribute.ReduceOp.MEAN
        return strategy.reduce(mean, loss, axis=None), strategy.reduce(mean, acc, axis=None)

    ckpt = tf.train.Checkpoint(model=model)
    # Every worker saves (saving is collective); only the leader's copy is kept.
    manager = tf.train.CheckpointManager(ckpt, os.path.join(out_dir, "checkpoints"), 3)
    writer = tf.summary.create_file_writer(os.path.join(out_dir, "train"))
    iterator = iter(strategy.experimental_distribute_dataset(data))
    replicas = strategy.num_replicas_in_sync
    log(f"{task_type} {task_index}: MultiWorkerMirroredStrategy, {replicas} replicas")
    for step in range(1, args.steps + 1):
        loss, acc = step_fn(iterator)
        if step % args.log_every == 0 or step == args.steps:
            write_scalars(tf, writer, step, loss=float(loss), accuracy=float(acc))
            log(f"step {step}/{args.steps} loss {float(loss):.4f} accuracy {float(acc):.3f}")
        if step % args.checkpoint_every == 0 or step == args.steps:
            manager.save(checkpoint_number=step)


def serve(tf, cluster, task_type, task_index) -> None:  # noqa: ANN001
    """A PS or worker in parameter-server training: run a server until the job is torn down."""
    server = tf.distribute.Server(
        tf.train.ClusterSpec(cluster),
        job_name=task_type,
        task_index=task_index,
        protocol="grpc",
        start=True,
    )
    log(f"{task_type} {task_index}: serving at {cluster[task_type][task_index]}")
    server.join()


def coordinate(tf, args, train, cluster, task_index) -> None:  # noqa: ANN001
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type="chief", task_id=task_index, rpc_layer="grpc"
    )
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = build(tf, args.hidden)
    # Workers update the parameters asynchronously from slightly stale values; dividing the
    # rate by their number keeps the sum of in-flight updates near one synchronous step.
    replica_step = make_step_fn(tf, model, args.learning_rate / len(cluster["worker"]))

    def dataset_fn(_context=None):  # noqa: ANN001, ANN202
        # No seed: the function is traced once and run on every worker; a fixed seed would
        # feed all workers the same batches, and their identical updates add up (overshoot).
        return dataset(tf, train, args.batch_size, seed=None)

    per_worker = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def worker_fn(iterator):  # noqa: ANN001, ANN202
        return strategy.run(replica_step, args=next(iterator))

    ckpt = tf.train.Checkpoint(model=model)
    manager = tf.train.CheckpointManager(ckpt, os.path.join(args.log_dir, "checkpoints"), 3)
    writer = tf.summary.create_file_writer(os.path.join(args.log_dir, "train"))
    log(
        f"chief: ParameterServerStrategy with {len(cluster['worker'])} workers, "
        f"{len(cluster['ps'])} ps"
    )
    for step in range(1, args.steps + 1):
        result = coordinator.schedule(worker_fn, args=(per_worker,))
        if step % args.log_every == 0 or step == args.steps:
            coordinator.join()
            loss, acc = result.fetch()
            write_scalars(tf, writer, step, loss=float(loss), accuracy=float(acc))
            log(f"step {step}/{args.steps} loss {float(loss):.4f} accuracy {float(acc):.3f}")
        if step % args.checkpoint_every == 0 or step == args.steps:
            coordinator.join()
            manager.save(checkpoint_number=step)


def evaluate(tf, args, test) -> None:  # noqa: ANN001
    """Sidecar evaluator: evaluate each new checkpoint until the last step's one."""
    model = build(tf, args.hidden)
    ckpt = tf.train.Checkpoint(model=model)
    writer = tf.summary.create_file_writer(os.path.join(args.log_dir, "eval"))
    x, y = tf.constant(test[0]), tf.constant(test[1])
    ckpt_dir = os.path.join(args.log_dir, "checkpoints")
    log(f"evaluator: waiting for checkpoints in {ckpt_dir}")
    for path in tf.train.checkpoints_iterator(ckpt_dir, timeout=args.eval_timeout):
        ckpt.restore(path).expect_partial()
        step = int(model.step.numpy())
        logits = model(x)
        loss = float(
            tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        )
        acc = float(tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32)))
        write_scalars(tf, writer, step, loss=loss, accuracy=acc)
        log(f"eval at step {step}: loss {loss:.4f} accuracy {acc:.3f}")
        if step >= args.steps:
            return


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    cluster, task_type, task_index = read_tf_config()
    # Quieter C++ and Python logs unless asked otherwise; our own lines are what matter here.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    import tensorflow as tf  # after argument parsing, so --help is instant

    tf.get_logger().setLevel(os.environ.get("TF_LOG_LEVEL", "WARNING"))

    log(f"TensorFlow {tf.__version__}; task {task_type or 'single'} {task_index}")
    os.makedirs(args.log_dir, exist_ok=True)
    started = time.monotonic()
    train, test = load_data(args.data_dir)
    if task_type == "evaluator":
        evaluate(tf, args, test)
    elif task_type is None:
        train_single(tf, args, train)
    elif "ps" in cluster:
        if task_type in ("ps", "worker"):
            serve(tf, cluster, task_type, task_index)
        else:
            coordinate(tf, args, train, cluster, task_index)
    else:
        train_multi_worker(tf, args, train, cluster, task_type, task_index)
    log(f"done in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
