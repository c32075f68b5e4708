"""DistributedDataParallel on the CPU: 2 processes (gloo) give the same training run as 1.

Both processes join through ``lttw.device.make_runtime`` exactly as under ``torchrun`` (the env
variables MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK). The global batch is the
same in both runs (8 rows: 4 per rank). With 45 train rows every epoch ends with a partial
batch of 5 rows, split 3 / 2: a plain mean of the per-rank mean losses would differ from the
single-process loss there. With 41 rows the last batch has 1 row: rank 1 has none of its own
and must still join the gradient all-reduce (with zero weight).

Tolerance: the 2-process gradient is a sum of 2 partial sums (all-reduce) instead of one sum,
so it differs from the 1-process gradient by float32 rounding only; after 12 AdamW steps the
weights must agree to 1e-4 (max abs difference), the validation F1 exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file
from support.gloo import free_port, rank_env  # noqa: E402
from support.training_data import (  # noqa: E402
    CPU,
    TRAIN,
    VAL,
    assert_same_weights,
    build_model,
    train_settings,
)

from lttw.data.batching import Batchable  # noqa: E402
from lttw.training.loop import train_classifier  # noqa: E402

WORLD = 2
TOLERANCE = 1e-4


def head(data: Batchable, n: int) -> Batchable:
    return Batchable(data.input_ids[:n], data.attention_mask[:n], data.factors[:n], data.labels[:n])


#: the train rows of each case; both run in the same two processes, one after the other
CASES = (45, 41)


def _worker(rank: int, ports: list[int], encoder_dir: str, out_dir: str) -> None:
    """One DDP process: the env torchrun would set, then the pipeline's own runtime + loop, for
    each case of ``CASES`` in turn (a process group of its own each, on its own port)."""
    from lttw.device import make_runtime

    for n_train, port in zip(CASES, ports, strict=True):
        os.environ.update(
            {**rank_env(rank, port, WORLD), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        )
        out = Path(out_dir) / str(n_train)
        cfg = train_settings(distributed="auto", num_threads=1)
        rt = make_runtime(cfg)
        assert rt.ddp and rt.world_size == WORLD and rt.rank == rank
        assert dist.get_backend() == "gloo"
        model = build_model(encoder_dir)
        result = train_classifier(
            model,
            head(TRAIN, n_train),
            VAL,
            cfg,
            seed=7,
            rt=rt,
            checkpoint_dir=out / "ckpt",
            fingerprint="ddp",
        )
        if rt.is_main:
            out.mkdir(parents=True, exist_ok=True)
            save_file(
                {k: v.contiguous() for k, v in model.state_dict().items()},
                str(out / "weights.safetensors"),
            )
            (out / "result.json").write_text(
                json.dumps(
                    {
                        "f1": result.best_val_f1,
                        "best_epoch": result.best_epoch,
                        "steps": result.steps,
                        "world_size": rt.world_size,
                    }
                )
            )
        rt.barrier()
        rt.close()


@pytest.fixture(scope="module")
def ddp_runs(tiny_encoder_dir, tmp_path_factory) -> Path:
    """The two-process runs of every case, in one spawn (the processes' start-up, torch's
    import above all, paid once): ``<folder>/<n_train>/`` holds each run's weights and result."""
    folder = tmp_path_factory.mktemp("ddp")
    # spawn, not fork: a fork of this process (its OpenMP and other threads started by earlier
    # tests) can leave a child waiting on a lock no thread will release (two forked ranks hung
    # at start-up, 0.1 CPU-s each, under tools/other_kernels.py)
    mp.start_processes(
        _worker,
        args=([free_port() for _ in CASES], str(tiny_encoder_dir), str(folder)),
        nprocs=WORLD,
        join=True,
        start_method="spawn",
    )
    return folder


@pytest.mark.parametrize("n_train", CASES)
def test_two_gloo_processes_match_one_process(ddp_runs, tiny_encoder_dir, tmp_path, n_train):
    ddp = json.loads((ddp_runs / str(n_train) / "result.json").read_text())
    ddp_model = build_model(tiny_encoder_dir)
    ddp_model.load_state_dict(load_file(str(ddp_runs / str(n_train) / "weights.safetensors")))

    single = build_model(tiny_encoder_dir)
    result = train_classifier(
        single,
        head(TRAIN, n_train),
        VAL,
        train_settings(),
        seed=7,
        rt=CPU,
        checkpoint_dir=tmp_path / "single",
        fingerprint="single",
    )

    assert ddp["world_size"] == WORLD
    assert ddp["steps"] == result.steps == 12  # 2 epochs of ceil(n_train / 8) = 6 steps
    assert_same_weights(ddp_model, single, atol=TOLERANCE)
    assert ddp["best_epoch"] == result.best_epoch
    assert ddp["f1"] == pytest.approx(result.best_val_f1, abs=1e-9)
    # and the run moved the weights far more than the tolerance (the check is not vacuous)
    with pytest.raises(AssertionError):
        assert_same_weights(build_model(tiny_encoder_dir), single, atol=100 * TOLERANCE)
