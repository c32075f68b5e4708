"""bench/profile_train.py's phases add up: every op's (and range's) self CPU time is charged
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
    import profile_train

    (tmp_path / "enc").mkdir()
    (tmp_path / "enc" / "config.json").write_text(json.dumps(TINY))
    out = tmp_path / "profile.json"
    result = profile_train.main(
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
    assert by_phase["optimizer"].get("aten::copy_", 0) > 0  # fused AdamW's step counters
