"""How fast is prediction: a model folder's own call, ``lttw serve`` under load, and batch
prediction on Ray Data.

    python bench/prediction.py batch --synthetic --quick    # Predictor.predict_proba, texts/s
    python bench/prediction.py batch --model models/fold_0  # a trained model folder
    python bench/prediction.py serve --model models/fold_0 --texts data/sample/test.parquet
    python bench/prediction.py ray --quick                  # Ray Data, 1 and 2 actors

``batch`` (``steps/predict_batch.py``): texts/s of ``Predictor.predict_proba`` (what ``lttw
predict`` calls) on the CPU and a GPU, split into tokenisation / factor lookup / model;
``bench/results/predict_throughput.json``. ``serve`` (``steps/serve_load.py``): texts/s and
p50 / p99 latency of ``lttw serve`` (torch, ONNX fp32, ONNX int8) at 1, 8 and 64 concurrent
clients beside ``lttw predict --file``; ``bench/results/serve_throughput.json``. ``ray``
(``steps/ray_batch.py``): ``lttw.serving.ray_batch`` with 1 and 2 actors and what that makes
of 100 million texts; ``bench/measured/ray-batch-cpu.json``. ``MODE --help`` lists a mode's
options.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_mode  # noqa: E402


def main(argv=None) -> dict:
    from steps import predict_batch, ray_batch, serve_load

    modes = {"batch": predict_batch.main, "serve": serve_load.main, "ray": ray_batch.main}
    return run_mode(__doc__, modes, argv)


if __name__ == "__main__":
    main()
