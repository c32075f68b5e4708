"""Throughput of batch prediction on Ray Data (``lttw.serving.ray_batch``) with 1 and 2 actors
(one CPU thread each) on this machine, and what that makes of 100 million texts.

    python bench/prediction.py ray                 # MiniLM LTTW, 4,000 texts in 4 parquet shards
    python bench/prediction.py ray --quick         # a smoke run (400 texts)

The model is ``bench/prediction.py batch``'s synthetic LTTW folder around the embedded
MiniLM-L6 (random head: throughput does not depend on the weights), exported to ONNX (what a
batch job would run). Each run is timed end to end: Ray Data's read tasks, the actors'
start-up (one model load each) and the parquet write. Writes ``bench/measured/ray-batch-cpu.json``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402
from common import ROOT, describe  # noqa: E402  (bench/ is on sys.path)

from steps.predict_batch import build_synthetic_folder, default_encoder_dir, synthetic_texts  # noqa: E402

OUT = ROOT / "bench" / "measured" / "ray-batch-cpu.json"
TEXTS_AT_SCALE = 100_000_000


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="prediction.py ray", description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=4000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="400 texts, not written to JSON")
    args = parser.parse_args(argv)
    n = 400 if args.quick else args.texts

    import ray
    from typer.testing import CliRunner

    from lttw.cli import app
    from lttw.encoder.tokenizer import load_tokenizer
    from lttw.io import write_json
    from lttw.serving.ray_batch import RayBatchSettings, predict_shards

    encoder = default_encoder_dir()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = work / "model"
        build_synthetic_folder(model, encoder, "lttw", max_len=64, seed=0)
        result = CliRunner().invoke(app, ["export", "--model", str(model), "--out",
                                          str(work / "onnx"), "--onnx"])  # fmt: skip
        if result.exit_code != 0:
            raise SystemExit(f"export failed: {result.output}")
        texts = synthetic_texts(n, load_tokenizer(encoder), seed=1)
        shards = work / "shards"
        shards.mkdir()
        per = -(-n // args.shards)
        for i in range(args.shards):
            part = texts[i * per : (i + 1) * per]
            pd.DataFrame({"id": range(i * per, i * per + len(part)), "text": part}).to_parquet(
                shards / f"part-{i:03d}.parquet"
            )
        ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
        runs = []
        for actors in (1, 2):
            settings = RayBatchSettings(actors=actors, batch_size=args.batch_size)
            start = time.perf_counter()
            rows = predict_shards(work / "onnx", shards, work / f"out-{actors}", settings)
            seconds = time.perf_counter() - start
            runs.append({"actors": actors, "texts": rows, "seconds": round(seconds, 2),
                         "texts_per_s": round(rows / seconds, 1)})  # fmt: skip
            print(
                f"{actors} actor(s): {rows} texts in {seconds:.1f} s, {rows / seconds:.0f} texts/s"
            )
        ray.shutdown()
    best = max(r["texts_per_s"] for r in runs)
    per_actor = runs[0]["texts_per_s"]
    doc = {
        "what": "lttw.serving.ray_batch.predict_shards, MiniLM LTTW exported to ONNX, "
        "end to end (read, actor start-up, predict, parquet write)",
        "command": "python bench/prediction.py ray",
        "machine": describe(packages=("ray", "onnxruntime")),
        "texts": n,
        "shards": args.shards,
        "batch_size": args.batch_size,
        "runs": runs,
        "speedup_2_actors": round(runs[1]["texts_per_s"] / per_actor, 2),
        "estimate_100m_texts": {
            "hours_at_best_rate": round(TEXTS_AT_SCALE / best / 3600, 1),
            "actors_for_one_hour_at_one_actor_rate": int(-(-TEXTS_AT_SCALE // (per_actor * 3600))),
        },
    }
    if not args.quick:
        write_json(OUT, doc)
        print(f"wrote {OUT.relative_to(ROOT)}")
    return doc
