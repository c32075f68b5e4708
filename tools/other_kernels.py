"""The numeric tests a second time, under another CPU kernel family than this machine's own
(issue 59; `make test` runs it after the suite).

torch's CPU kernels, oneDNN and MKL pick their code by the CPU (``AVX512``, ``AVX2``, ...),
and the rounding of a sum can change with it: a text answered alone and inside a batch can
differ in the last bits of its probability on one CPU and agree on another. A test that
wants equal floats from two computations passes on the machine it was written on and fails
on the next. Running the tests that compare floats under a second kernel family on every
machine (on an AVX-512 CPU: AVX2; elsewhere: the default, unvectorised kernels) makes such a
test fail where it was written more often, though not always (see docs/how-to/development.md).

    python tools/other_kernels.py [more pytest options]
    python tools/other_kernels.py --print-env    # the variables only, for a run by hand
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: the tests that compare floats computed two ways (batch sizes and compositions, torch and
#: ONNX, server and CLI, one process and two): serving, inference, the models, the CLI's
#: answers and the distributed-training agreement
SUBSET = [
    "tests/serving/test_serving_server.py",
    "tests/serving/test_serve_answers.py",
    "tests/serving/test_serving_onnx.py",
    "tests/inference/test_calibrated_predictor.py",
    "tests/models/test_baselines.py",
    "tests/models/test_calibrated_proba.py",
    "tests/models/test_calibration.py",
    "tests/models/test_ensemble_variant.py",
    "tests/models/test_fusion.py",
    "tests/models/test_model.py",
    "tests/models/test_tfidf_multi_label.py",
    "tests/models/test_trained.py",
    "tests/cli/test_predict_answers.py",
    "tests/training/test_distributed.py",
]
#: tests of those files left out (slow, and about processes, not numbers): none now
DESELECT: list[str] = []


def other_family(native: str) -> dict[str, str] | None:
    """The variables that select a kernel family other than ``native`` (torch's
    ``get_cpu_capability()``) for torch (ATen), oneDNN and MKL; None on a CPU that has
    only the default kernels."""
    if native == "DEFAULT":
        return None
    if native == "AVX512":
        return {
            "ATEN_CPU_CAPABILITY": "avx2",
            "DNNL_MAX_CPU_ISA": "AVX2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        }
    return {
        "ATEN_CPU_CAPABILITY": "default",
        "DNNL_MAX_CPU_ISA": "SSE41",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    }


def main(argv: list[str]) -> int:
    import torch

    native = torch.backends.cpu.get_cpu_capability()
    env = other_family(native)
    if argv[:1] == ["--print-env"]:
        print(" ".join(f"{k}={v}" for k, v in (env or {}).items()))
        return 0
    if env is None:
        print(f"other kernels: this CPU has only the {native} kernels; no second pass")
        return 0
    print(f"other kernels: native {native}; the numeric tests again with", *env.items())
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup"]
    command += SUBSET + [f"--deselect={test}" for test in DESELECT] + argv
    return subprocess.call(command, env={**os.environ, **env}, cwd=REPO)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
