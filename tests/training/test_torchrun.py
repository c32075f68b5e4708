"""The train stage under ``torchrun`` on the CPU (gloo), on the tiny profile's pipeline.

- ``dvc repro`` with ``train.launcher: torchrun --standalone --nproc-per-node 2`` runs the
  real stage in two processes (the uninterrupted reference run);
- two torchrun agents on loopback (``--nnodes 2 --nproc-per-node 1``), each in its own copy
  of the project (a node's own storage: only node 0's rank 0 writes checkpoints), both end
  after the checkpoint of step ``CRASH_STEP`` (``LTTW_CRASH_AT_STEP``: every process ends as
  a SIGKILL ends it, mid-epoch 2) and are started again, the node ranks swapped (the node
  holding the checkpoint is now rank 1): the model equals the uninterrupted run's.

The tiny fold has 80 train rows: 5 steps of 16 rows an epoch, 2 epochs, 10 steps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from support.gloo import free_port
from support.tiny_project import env, ran, run, set_params

STEPS = 10
CRASH_STEP = 7  # mid-epoch 2, after epoch 1's best weights were kept
AGENT_TIMEOUT_S = 120
TRAIN = {"epochs": 2, "max_epochs": 2, "num_threads": 1, "log_every": 4}  # no extension


def weights(project: Path) -> dict[str, torch.Tensor]:
    (path,) = (project / "models" / "fold_0").glob("*.safetensors")
    return load_file(str(path))


def train_metrics(project: Path) -> dict:
    return json.loads((project / "metrics" / "train" / "fold_0.json").read_text())


@pytest.fixture(scope="module")
def standalone(tiny_repro, tmp_path_factory) -> Path:
    """``dvc repro train@0`` under ``torchrun --standalone --nproc-per-node 2``."""
    project = tiny_repro.copy(tmp_path_factory.mktemp("torchrun") / "project")
    set_params(project, train={**TRAIN, "launcher": "torchrun --standalone --nproc-per-node 2"})
    output = run(["dvc", "repro", "train@0"], project, timeout=AGENT_TIMEOUT_S)
    assert ran(output) == {"train@0"}, output[-3000:]
    return project


@pytest.mark.slow  # the real stage in torchrun's processes
def test_dvc_repro_runs_the_train_stage_under_torchrun(standalone):
    lock = (standalone / "dvc.lock").read_text()
    assert "cmd: torchrun --standalone --nproc-per-node 2 stages/train.py --fold 0" in lock
    summary = train_metrics(standalone)
    assert summary["world_size"] == 2
    assert summary["steps"] == STEPS
    assert not (standalone / "data" / "checkpoints" / "fold_0" / "last.safetensors").exists()


def _agents(nodes: list[Path], port: int, crash: bool) -> list[tuple[int, str]]:
    """Node ``i`` of ``nodes`` runs a torchrun agent (node rank ``i``) in its own folder;
    their exit codes and output, each stopped after ``AGENT_TIMEOUT_S``."""
    procs = []
    for rank, folder in enumerate(nodes):
        argv = [
            "torchrun",
            "--nnodes",
            "2",
            "--nproc-per-node",
            "1",
            "--node-rank",
            str(rank),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            "stages/train.py",
            "--fold",
            "0",
        ]
        extra = {"LTTW_CRASH_AT_STEP": str(CRASH_STEP)} if crash else {}
        procs.append(
            subprocess.Popen(
                argv,
                cwd=folder,
                env={**env(), **extra},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        )
    results = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=AGENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            for other in procs:  # a hung collective: stop every agent and its workers
                if other.poll() is None:
                    os.killpg(other.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            out += f"\n[stopped after {AGENT_TIMEOUT_S} s]"
        results.append((proc.returncode, out))
    return results


@pytest.mark.slow
def test_two_nodes_killed_and_restarted_train_the_uninterrupted_model(
    tiny_repro, standalone, tmp_path
):
    nodes = [tiny_repro.copy(tmp_path / f"node{i}") for i in range(2)]
    for node in nodes:
        set_params(node, train=TRAIN)
        for folder in ("models/fold_0", "metrics/train"):
            subprocess.run(["rm", "-rf", str(node / folder)], check=True)

    crashed = _agents(nodes, free_port(), crash=True)
    assert all(code != 0 for code, _ in crashed), crashed
    checkpoints = [node / "data" / "checkpoints" / "fold_0" / "last.safetensors" for node in nodes]
    assert checkpoints[0].is_file() and not checkpoints[1].exists()  # rank 0's node only
    assert not (nodes[0] / "models" / "fold_0").exists()

    # started again, the node ranks swapped: rank 0 (nodes[1]) has no checkpoint of its own
    finished = _agents(nodes[::-1], free_port(), crash=False)
    assert all(code == 0 for code, _ in finished), "\n".join(out[-3000:] for _, out in finished)
    assert "checkpoint received from rank 1" in finished[0][1]
    summary = train_metrics(nodes[1])
    assert summary["world_size"] == 2 and summary["steps"] == STEPS

    reference, resumed = weights(standalone), weights(nodes[1])
    assert reference.keys() == resumed.keys()
    for name in reference:
        torch.testing.assert_close(resumed[name], reference[name], rtol=0, atol=1e-6, msg=name)
    assert train_metrics(standalone)["best_val_f1_macro"] == summary["best_val_f1_macro"]
    # no checkpoint of the finished run is left on either node to be resumed later
    assert not any(path.exists() for path in checkpoints)
