"""The embedded AG News sample (``datasets/ag_news``) against the full data: how many of the
default profile's rows are the same, and how far a fast model's held-out F1 moves.

For each seed, the default profile's samples (params.yaml: 5,000 train, 1,000 test, 1,000
predict rows, balanced) are drawn from both folders, a TF-IDF + linear SVM
(``model.variant: tfidf_linear``, its default settings) is fitted on each train sample, and
the macro F1 on each test and predict sample is reported. The seeds' spread on the full data
is the yardstick for the difference between the two folders. About 10 s a seed on one CPU::

    python bench/small_data.py embedded-sample --full "$LTTW_DATA_ROOT/ag_news"
    python bench/small_data.py embedded-sample --full DIR/ag_news --seeds 42 43 44 45 46 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from common import ROOT, describe  # (bench/ is on sys.path: the script's folder)

from lttw.data.datasets import load_dataset  # noqa: E402
from lttw.data.sampling import draw_samples  # noqa: E402
from lttw.evaluation.metrics import classification_metrics  # noqa: E402
from lttw.models.tfidf import fit_tfidf_linear  # noqa: E402
from lttw.settings import read_settings  # noqa: E402


def scores(folder: Path, seed: int) -> tuple[dict, set]:
    settings = read_settings(ROOT / "params.yaml")
    data = settings.data.model_copy(update={"root": str(folder.parent), "dataset": folder.name})
    dataset = load_dataset(data)
    frames, _ = draw_samples(dataset, data, seed)
    train = frames["train"]
    model = fit_tfidf_linear(
        train["text"].tolist(), train["label"].to_numpy(), len(dataset.classes), "svm", seed
    )
    out = {}
    for split in ("test", "predict"):
        frame = frames[split]
        predicted = model.predict_proba(frame["text"].tolist()).argmax(axis=1)
        metrics = classification_metrics(frame["label"].to_numpy(), predicted, len(dataset.classes))
        out[split] = round(float(metrics["f1_macro"]), 4)
    return out, set(train["text"])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        prog="small_data.py embedded-sample", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--full", type=Path, required=True, help="the full AG News folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44, 45, 46])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    embedded = ROOT / "datasets" / "ag_news"
    rows = []
    for seed in args.seeds:
        full, full_train = scores(args.full.resolve(), seed)
        small, small_train = scores(embedded, seed)
        shared = len(full_train & small_train) / len(full_train)
        rows.append({"seed": seed, "full": full, "embedded": small, "same_train_rows": shared})
        print(
            f"seed {seed}: test F1 full {full['test']:.4f} embedded {small['test']:.4f}; "
            f"predict F1 full {full['predict']:.4f} embedded {small['predict']:.4f}; "
            f"{shared:.1%} of the train rows the same"
        )
    summary = {}
    for split in ("test", "predict"):
        f = np.array([r["full"][split] for r in rows])
        e = np.array([r["embedded"][split] for r in rows])
        summary[split] = {
            "full_mean": round(float(f.mean()), 4),
            "full_std": round(float(f.std(ddof=1)), 4) if len(f) > 1 else 0.0,
            "embedded_mean": round(float(e.mean()), 4),
            "embedded_std": round(float(e.std(ddof=1)), 4) if len(e) > 1 else 0.0,
            "mean_difference": round(float((e - f).mean()), 4),
        }
        print(f"{split}: {summary[split]}")
    size = sum(p.stat().st_size for p in embedded.iterdir())
    print(f"datasets/ag_news: {size / 1e6:.2f} MB")
    record = {"seeds": rows, "summary": summary, "embedded_bytes": size, "machine": describe()}
    if args.json:
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return record
