"""A two-process (gloo) run killed mid-epoch and restarted resumes on every rank alike, in
spawned child processes (``test_torchrun.py`` runs the same through torchrun and the
real stage): each rank checkpoints into its own node's folder (only rank 0 writes), both end
after the checkpoint of step ``CRASH_STEP`` (``LTTW_CRASH_AT_STEP``), and the restart puts
the ranks on the other folders, so rank 0 has no checkpoint of its own: the weights equal an
uninterrupted two-process run's. 45 train rows, 8 a batch (4 a rank): 6 steps an epoch, the
last batch split 3 / 2, so the ranks' dropout draws differ and each needs its own state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file
from support.gloo import free_port, rank_env
from support.training_data import TRAIN, VAL, build_model, train_settings
from torch import nn

from lttw.training.loop import train_classifier
from lttw.training.session import CRASH_AT_STEP as CRASH_AT_STEP_ENV

WORLD = 2
CRASH_STEP = 9  # mid-epoch 2, after epoch 1's checkpoint and best weights


def _worker(rank: int, ports: list[int], encoder_dir: str, out: str, runs: list[tuple]):
    """One rank of each run of ``runs`` (tag, swap, crash), in turn: a process group of its own
    each, on its own port; a crashing run ends the process."""
    from lttw.device import make_runtime

    for port, (tag, swap, crash) in zip(ports, runs, strict=True):
        os.environ.update(rank_env(rank, port, WORLD))
        if crash:
            os.environ[CRASH_AT_STEP_ENV] = str(CRASH_STEP)
        cfg = train_settings(distributed="auto", num_threads=1)
        rt = make_runtime(cfg)
        node = (1 - rank) if swap else rank
        model = build_model(encoder_dir)
        for module in model.modules():  # dropout on: every rank draws its own masks
            if isinstance(module, nn.Dropout):
                module.p = 0.1
        result = train_classifier(
            model, TRAIN, VAL, cfg, 7, rt, Path(out) / tag / f"node{node}", fingerprint="resume"
        )
        if rt.is_main:
            state = {k: v.contiguous() for k, v in model.state_dict().items()}
            save_file(state, str(Path(out) / f"{tag}.safetensors"), {"steps": str(result.steps)})
        rt.barrier()
        rt.close()


def _run(tmp_path: Path, encoder_dir, *runs: tuple[str, bool, bool]):
    args = ([free_port() for _ in runs], str(encoder_dir), str(tmp_path), list(runs))
    # spawn, not fork: a fork of this process (threads started by earlier tests) can hang a
    # rank at start-up on a lock no thread will release (tests/training/test_distributed.py)
    mp.start_processes(_worker, args=args, nprocs=WORLD, join=True, start_method="spawn")


def test_a_killed_two_process_run_resumes_on_every_rank(tiny_encoder_dir, tmp_path):
    # the uninterrupted run, then the one that crashes, in the same two processes
    with pytest.raises(mp.ProcessExitedException):
        _run(tmp_path, tiny_encoder_dir, ("whole", False, False), ("again", False, True))
    assert (tmp_path / "whole.safetensors").is_file()
    folders = tmp_path / "again"
    assert (folders / "node0" / "last.safetensors").is_file()
    assert not (folders / "node1" / "last.safetensors").exists()
    _run(tmp_path, tiny_encoder_dir, ("again", True, False))

    whole = load_file(str(tmp_path / "whole.safetensors"))
    resumed = load_file(str(tmp_path / "again.safetensors"))
    assert whole.keys() == resumed.keys()
    for name in whole:
        assert (whole[name] - resumed[name]).abs().max() <= 1e-6, name
    assert not list(folders.glob("node*/last.safetensors"))  # none left to resume later
