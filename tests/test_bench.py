"""The benchmark scripts run (quick settings, on the CPU) and write what their READMEs say:
the profile's phases come from the loop's own labelled ranges, and real token lengths give
trimmed batches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_profile_train_attributes_time_to_the_step_phases(tmp_path):
    import profile_train

    out = tmp_path / "profile.json"
    result = profile_train.main(["--quick", "--steps", "1", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    phases = result["ms_per_step_by_phase"]
    assert {"forward", "backward", "optimizer", "clip_grad_norm", "batch"} <= set(phases)
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0
    # nearly all op time lies inside the labelled phases
    assert phases.get("other (outside the step's phases)", 0) < 0.05 * sum(phases.values())
    assert result["forward_backward_ms_per_step_by_category"]["matmul"] > 0
    assert set(result["forward_ms_per_step_cpu_inclusive"]) == {
        "forward: encoder", "forward: attention block 0", "forward: classifier"}


def test_train_throughput_with_real_lengths_trims_batches(tmp_path):
    import train_throughput

    texts = tmp_path / "texts.parquet"
    import pandas as pd

    pd.DataFrame({"text": ["short text"] * 30 + ["a somewhat longer text " * 3] * 2}).to_parquet(
        texts)
    result = train_throughput.main(["--quick", "--encoders", "minilm", "--variants", "lttw",
                                    "--precisions", "fp32", "--lengths-from", str(texts),
                                    "--out", str(tmp_path / "t.json")])
    row = result["rows"][0]
    assert row["lengths_from"] == str(texts)
    assert 8 <= row["mean_batch_width"] < 32  # quick seq 32: most batches trim to 8
    full = train_throughput.main(["--quick", "--encoders", "minilm", "--variants", "lttw",
                                  "--precisions", "fp32", "--out", str(tmp_path / "f.json")])
    assert row["gflops_per_sample_fwd_bwd"] < full["rows"][0]["gflops_per_sample_fwd_bwd"]
