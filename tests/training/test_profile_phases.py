"""bench/train_step.py profile's phases add up: every op's (and range's) self CPU time is charged
once, to the loop phase it ran in, so the phases sum to the profiler's own total of the
profiled steps (issue 43 item 3); its JSON carries the op counts per step."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

TINY = {
    "model_type": "bert",
    "vocab_size": 1200,  # the bench's synthetic ids start at 1000
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "pad_token_id": 0,
}


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_phases_add_up_to_the_profiled_step(tmp_path):
    from steps import profile

    (tmp_path / "enc").mkdir()
    (tmp_path / "enc" / "config.json").write_text(json.dumps(TINY))
    out = tmp_path / "profile.json"
    result = profile.main(
        [
            *("--encoder-dir", str(tmp_path / "enc"), "--device", "cpu"),
            *("--seq", "16", "--batch", "4", "--warmup", "1", "--steps", "2"),
            *("--out", str(out)),
        ]
    )
    assert json.loads(out.read_text()) == result
    phases = result["ms_per_step_by_phase"]
    assert {"batch", "forward", "backward", "clip_grad_norm", "optimizer"} <= set(phases)
    # a ratio on one run, against the profiler's own step ranges (not the wall clock)
    assert result["step_ms_source"] == "profiler ProfilerStep ranges"
    assert 0.9 <= sum(phases.values()) / result["step_ms"] <= 1.1
    assert result["phases_sum_over_step"] == pytest.approx(1.0, abs=0.1)
    counts = result["op_counts"]
    assert counts["per_step"]["aten::copy_"] > 0
    assert counts["per_step"]["all aten:: ops"] > counts["per_step"]["aten::copy_"]
    by_phase = counts["per_step_by_phase"]
    assert sum(p.get("aten::copy_", 0) for p in by_phase.values()) == pytest.approx(
        counts["per_step"]["aten::copy_"], abs=0.5
    )
    assert by_phase["optimizer"]["all aten:: ops"] > 0  # the optimiser's ops are charged to it
    assert by_phase["optimizer"].get("aten::copy_", 0) == 0  # FusedAdamW: no cast per counter


def test_cuda_kernels_count_once_in_the_phase_that_launched_them():
    """On CUDA each kernel's device time is charged once, to the phase of the CPU op that
    launched it (its correlation id), never also as the op's own device time; the user
    annotations that mirror the ranges on the device are not kernels."""
    from types import SimpleNamespace

    from steps import phases
    from torch.autograd import DeviceType

    def cpu(id_, name, parent=None):
        return SimpleNamespace(
            id=id_, name=name, cpu_parent=parent, device_type=DeviceType.CPU, is_async=False
        )

    def kernel(name, launcher_id, us, annotation=False):
        span = SimpleNamespace(elapsed_us=lambda: us)
        return SimpleNamespace(
            id=-1,
            name=name,
            device_type=DeviceType.CUDA,
            linked_correlation_id=launcher_id,
            time_range=span,
            is_user_annotation=annotation,
        )

    forward = cpu(1, "lttw.forward")
    mm = cpu(2, "aten::mm", forward)
    engine = cpu(3, "autograd::engine::evaluate_function: MmBackward0")
    mm_back = cpu(4, "aten::mm", engine)
    optimizer = cpu(5, "lttw.optimizer")
    adam = cpu(6, "aten::_fused_adamw_", optimizer)
    tree = [forward, mm, engine, mm_back, optimizer, adam]
    tree += [
        kernel("nvjet_a", 2, 40.0),
        kernel("nvjet_b", 2, 40.0),
        kernel("nvjet_c", 4, 100.0),
        kernel("fused_adamw", 6, 10.0),
        kernel("lttw.forward", 1, 85.0, annotation=True),  # the range's device mirror
        kernel("orphan", 999, 5.0),  # launched by no recorded op
    ]
    by_phase, by_event = phases.phase_times(tree, cuda=True)
    assert by_phase == {
        "forward": 80.0,
        "backward": 100.0,
        "optimizer": 10.0,
        phases.OTHER: 5.0,
    }
    assert by_event == {2: 80.0, 4: 100.0, 6: 10.0}
