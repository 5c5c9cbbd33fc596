"""examples/mnist/main.py: its reading of TF_CONFIG, and real TensorFlow runs when installed.

TensorFlow is an optional extra (`pip install -e '.[tensorflow]'`), not a test dependency:
the real runs are skipped where it is missing, so CI stays fast.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tfgen.repo.runtimes import tfconfig
from tfgen.run import localpods, runlocal

MAIN = Path(__file__).resolve().parents[1] / "examples" / "mnist" / "main.py"


def load_main() -> ModuleType:
    pytest.importorskip("numpy")
    spec = importlib.util.spec_from_file_location("mnist_main", MAIN)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_master_is_read_as_chief_and_evaluator_leaves_the_training_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    main = load_main()
    config = {
        "cluster": {
            "evaluator": ["e:2222"],
            "master": ["m:2222"],
            "ps": ["p:2222"],
            "worker": ["w:2222"],
        },
        "task": {"type": "master", "index": 0},
        "environment": "cloud",
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    cluster, task_type, index = main.read_tf_config()
    assert cluster == {"chief": ["m:2222"], "ps": ["p:2222"], "worker": ["w:2222"]}
    assert (task_type, index) == ("chief", 0)
    monkeypatch.delenv("TF_CONFIG")
    assert main.read_tf_config() == ({}, None, 0)


def mnist_job(roles: dict[str, int], steps: int) -> dict[str, Any]:
    container = {
        "name": "tensorflow",
        "image": "example",
        "command": ["python", str(MAIN)],
        "args": [
            "--data_dir=/training/tensorflow/input_data",
            "--log_dir=/training/tensorflow/logs",
            f"--steps={steps}",
            "--log_every=5",
            "--checkpoint_every=10",
            "--eval_timeout=60",
        ],
    }
    return {
        "kind": "TFJob",
        "metadata": {"name": "mnist", "namespace": "default"},
        "spec": {
            "tfReplicaSpecs": {
                k: {"replicas": n, "template": {"spec": {"containers": [container]}}}
                for k, n in roles.items()
            }
        },
    }


@pytest.mark.parametrize(
    "roles",
    [
        # Master (read as chief) and an evaluator in the cluster: both would break TF 2 PS
        # training if the program took TF_CONFIG as it comes (ValueError / a hang).
        pytest.param({"Master": 1, "Worker": 1, "PS": 1, "Evaluator": 1}, id="ps-master-evaluator"),
        pytest.param({"Chief": 1, "Worker": 1, "Evaluator": 1}, id="multi-worker-evaluator"),
    ],
)
def test_real_tensorflow_run_writes_event_files(tmp_path: Path, roles: dict[str, int]) -> None:
    pytest.importorskip("tensorflow")
    job = mnist_job(roles, steps=20)
    lines: list[str] = []
    result = runlocal.run_pods(
        tfconfig.pods(job),
        job,
        localpods.LocalVolume("/training", str(tmp_path)),
        emit=lines.append,
        options=localpods.PodRunOptions(timeout=240),
    )
    assert result.exit_code == 0, "\n".join(lines[-30:])
    logs = tmp_path / "tensorflow" / "logs"
    assert list((logs / "train").glob("events.out.tfevents.*"))
    assert (logs / "checkpoints" / "checkpoint").exists()
    assert any("step 20/20" in line for line in lines)
