"""The training step: how fast, where its time goes, what attention costs as n grows, and
whether ``torch.compile`` meets the epoch targets.

    python bench/train_step.py throughput [options]   # time per epoch, samples/s, FLOPs, MFU
    python bench/train_step.py profile [options]      # torch.profiler by step phase, op counts
    python bench/train_step.py attention [options]    # Linformer vs SDPA MHA, time and memory
    python bench/train_step.py compile-summary        # gpu.sh profile's compile off / on runs

``throughput`` (``steps/throughput.py``): the train stage's own loop
(``lttw.training.loop.train_classifier``) on LTTW and LTTW-M around MiniLM-L6 and a
BERT-base-sized encoder, fp32 / bf16, eager / ``torch.compile``; writes
``bench/results/train_throughput.json``. ``profile`` (``steps/profile.py``): the same loop,
models and batches under ``torch.profiler``, each unit of time charged once to a step phase;
``bench/results/profile_train.json``. ``attention`` (``steps/attention.py``): one
``AttentionBlock``, forward + backward; ``bench/results/attention_scaling.json``. Each of
these takes ``--quick`` (CPU smoke settings, < 60 s) and ``--help``. ``compile-summary``
(``steps/compile_summary.py``): the ``profile`` runs that ``bench/gpu.sh profile`` writes,
compile off and on, as 60,000-text epochs beside the GPU targets;
``bench/results/profile_compile.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_mode  # noqa: E402


def main(argv=None) -> dict:
    from steps import attention, compile_summary, profile, throughput

    modes = {
        "throughput": throughput.main,
        "profile": profile.main,
        "attention": attention.main,
        "compile-summary": compile_summary.main,
    }
    return run_mode(__doc__, modes, argv)


if __name__ == "__main__":
    main()
