"""The data-side stages on the CPU, at the paper profile's sizes.

    python bench/large_data.py factors        # counts, NMF, features: bench/results/stages_cpu.json
    python bench/large_data.py factors --size 8000
    python bench/large_data.py tokens         # the tokens stage: bench/results/tokens_cpu.json
    python bench/large_data.py tokens --texts 14900          # a quarter of the paper's sizes
    PYTHONPATH=/path/to/other/src python bench/large_data.py tokens --out before.json
    python bench/large_data.py factors --quick               # smoke runs (2,000 texts)
    python bench/large_data.py tokens --quick

``factors``: counts, NMF and latent-factor features for one fold. Paper-sized sample: 60,000
class-balanced AG News texts. The local AG News copy has 55,496 train + 7,600 test rows, so
the sample is drawn from both splits pooled (``use_splits: false``); when fewer rows exist
the largest balanced size is used and the output says so. Counts and NMF use the fold's
train part (8/10 of the sample), features are computed for every sample text. A plain
Python-dict implementation of Algorithm 1 is timed on the same texts for comparison.

``tokens``: the ``tokens`` stage's work, the encoder's tokenizer over 52,000 + 4,000 + 3,600
= 59,600 AG News texts (train, test and predict samples) at max_len 128, as
``stages/tokens.py`` calls it (``encode_texts``, then the [UNK] share of the train sample),
best of ``--repeats``, in wall and in CPU time. The texts are the local AG News train and
test rows pooled, in file order (the stage's sample is a class-balanced draw of them;
tokenising does not depend on which rows).
"""

from __future__ import annotations

import argparse
import logging
import re
import resource
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, describe  # (bench/ is on sys.path: the script's folder)

from lttw.data.datasets import load_dataset  # noqa: E402
from lttw.data.folds import assign_folds, fold_parts
from lttw.data.sampling import draw_samples
from lttw.factors.counts import corpus_counts, normalise_rows, regex_splitter, word_label_counts
from lttw.factors.cross_fit import out_of_fold_factors
from lttw.factors.features import latent_factor_tensor
from lttw.factors.nmf import latent_factors
from lttw.io import write_json  # noqa: E402
from lttw.settings import CountSettings, DataSettings, NMFSettings

DATASETS = ROOT / "datasets"  # the embedded AG News sample; --root for a full copy
#: the paper profile's samples: train 52,000, test 4,000, predict 3,600
PAPER_TEXTS = 52_000 + 4_000 + 3_600


def dict_algorithm_1(texts, labels, n_labels, settings: CountSettings):
    """Algorithm 1 as written: for every word occurrence, n[w][c] += 1 (Python dicts)."""
    pattern = re.compile(settings.token_pattern)
    n = defaultdict(lambda: [0] * n_labels)
    for text, label in zip(texts, labels):
        for word in pattern.findall(text.lower() if settings.lowercase else text):
            n[word][label] += 1
    return n


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def traced_peak(fn) -> float:
    """Peak traced Python/numpy allocation (MiB) while ``fn`` runs (not timed)."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def factor_stages(argv=None) -> dict:
    ap = argparse.ArgumentParser(
        prog="large_data.py factors", description="counts, NMF, features for one fold"
    )
    ap.add_argument("--root", default=str(DATASETS))
    ap.add_argument("--dataset", default="ag_news")
    ap.add_argument("--size", type=int, default=60000)
    ap.add_argument("--quick", action="store_true", help="a smoke run: --size 2000")
    ap.add_argument("--rank", type=int, default=5)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--s", type=int, default=10)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--train-factors", choices=["out_of_fold", "in_sample"], default="out_of_fold")
    ap.add_argument("--factor-splits", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", default=str(RESULTS / "stages_cpu.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.size = 2000
    logging.basicConfig(level=logging.WARNING, format="  (log) %(name)s: %(message)s")

    dataset = load_dataset(DataSettings(dataset=args.dataset, root=args.root, use_splits=False))
    p = len(dataset.classes)
    largest = p * int(np.bincount(dataset.labels, minlength=p).min())
    size = min(args.size, largest)
    note = (
        f"{args.dataset}: {len(dataset.labels)} rows (all splits pooled); balanced sample of "
        f"{size} texts"
        + (
            ""
            if size == args.size
            else f" (asked {args.size}; largest balanced size here is {largest})"
        )
    )
    print(note)
    data_settings = DataSettings(
        dataset=args.dataset,
        root=args.root,
        train_size=size,
        test_size=0,
        predict_size=0,
        use_splits=False,
    )
    frame = draw_samples(dataset, data_settings, args.seed)[0]["train"]
    texts, labels = frame["text"].tolist(), frame["label"].to_numpy()
    train_rows = fold_parts(assign_folds(labels, 10, args.seed), args.fold, 10)["train"]
    train_texts = [texts[i] for i in train_rows]
    train_labels = labels[train_rows]
    cs, nmf = CountSettings(), NMFSettings(rank=args.rank)

    def counts_stage():
        return word_label_counts(train_texts, train_labels, p, cs)

    def nmf_stage(counts):
        return latent_factors(normalise_rows(counts), args.rank, nmf, args.seed)

    def features_stage(counts, vocabulary, factors):
        tensor = latent_factor_tensor(
            texts,
            vocabulary,
            corpus_counts(counts),
            factors.word_factors,
            args.k,
            args.s,
            "count_then_corpus",
            regex_splitter(cs),
        )
        if args.train_factors == "out_of_fold":  # the stage's default (model.train_factors)
            tensor[train_rows] = out_of_fold_factors(
                train_texts,
                train_labels,
                p,
                factors.factor_label,
                args.k,
                args.s,
                "count_then_corpus",
                cs,
                nmf,
                args.factor_splits,
                args.seed,
            )
        return tensor

    rows = []
    (counts, vocabulary), t_counts = timed(counts_stage)
    rows.append(("counts", t_counts, rss_mib(), traced_peak(counts_stage)))
    factors, t_nmf = timed(lambda: nmf_stage(counts))
    rows.append(("nmf", t_nmf, rss_mib(), traced_peak(lambda: nmf_stage(counts))))
    tensor, t_feat = timed(lambda: features_stage(counts, vocabulary, factors))
    rows.append(
        (
            "features",
            t_feat,
            rss_mib(),
            traced_peak(lambda: features_stage(counts, vocabulary, factors)),
        )
    )
    brute, t_dict = timed(lambda: dict_algorithm_1(train_texts, train_labels, p, cs))
    dense = counts.toarray()
    same = len(brute) == len(vocabulary) and all(
        brute[w] == dense[i].tolist() for i, w in enumerate(vocabulary)
    )
    total = t_counts + t_nmf + t_feat

    print(f"\n{'stage':<22}{'wall s':>9}{'peak RSS MiB':>14}{'peak traced MiB':>17}")
    for name, t, rss, traced in rows:
        print(f"{name:<22}{t:>9.2f}{rss:>14.0f}{traced:>17.1f}")
    print(f"{'total (3 stages)':<22}{total:>9.2f}")
    print(f"{'dict Algorithm 1':<22}{t_dict:>9.2f}   (counts only; same matrix: {same})")
    print(
        f"\ncounts speed-up over the dict version: {t_dict / t_counts:.1f}x; "
        f"{len(train_texts)} train-part texts, {len(vocabulary)} words, "
        f"features {tuple(tensor.shape)}; NMF {factors.n_iter} iterations, init {factors.init}"
    )

    result = {
        "note": note,
        "dataset": args.dataset,
        "sample_size": size,
        "fold": args.fold,
        "train_part_texts": len(train_texts),
        "feature_texts": len(texts),
        "n_words": len(vocabulary),
        "n_labels": p,
        "rank": args.rank,
        "k": args.k,
        "s": args.s,
        "train_factors": args.train_factors,
        "stages": {
            name: {
                "wall_s": round(t, 3),
                "peak_rss_mib": round(rss, 1),
                "peak_traced_mib": round(traced, 1),
            }
            for name, t, rss, traced in rows
        },
        "total_wall_s": round(total, 3),
        "dict_algorithm_1_wall_s": round(t_dict, 3),
        "counts_speedup_vs_dict": round(t_dict / t_counts, 2),
        "dict_matches_sparse": same,
        "nmf_n_iter": factors.n_iter,
        "nmf_init": factors.init,
        "machine": describe(packages=("numpy", "scipy", "scikit-learn")),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    out = Path(args.out)
    write_json(out, result)  # atomic: a killed run leaves the old file
    print(f"wrote {out}")
    return result


def ag_news_texts(root: Path, n: int) -> list[str]:
    import pandas as pd

    folder = root / "ag_news"
    files = sorted(folder.glob("train*.parquet")) + sorted(folder.glob("test*.parquet"))
    texts: list[str] = []
    for file in files:
        texts += pd.read_parquet(file, columns=["text"])["text"].tolist()
    if len(texts) < n:
        raise SystemExit(f"{folder} has {len(texts)} texts, fewer than --texts {n}")
    return texts[:n]


def tokens(argv=None) -> dict:
    from lttw.encoder.pretrained import resolve_encoder
    from lttw.encoder.tokenizer import load_tokenizer
    from lttw.encoder.tokens import encode_texts, unknown_share

    ap = argparse.ArgumentParser(
        prog="large_data.py tokens", description="the tokens stage's work (encode_texts)"
    )
    ap.add_argument("--root", default=str(DATASETS))
    ap.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--texts", type=int, default=PAPER_TEXTS)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2,000 texts, 1 repeat")
    ap.add_argument("--out", default=str(RESULTS / "tokens_cpu.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.texts, args.repeats = 2000, 1

    start = time.perf_counter()
    tokenizer = load_tokenizer(resolve_encoder(args.encoder))
    load_s = time.perf_counter() - start
    texts = ag_news_texts(Path(args.root), args.texts)
    encode, encode_cpu, share = [], [], []
    for _ in range(args.repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        ids, mask = encode_texts(tokenizer, texts, args.max_len)
        encode.append(time.perf_counter() - start)
        encode_cpu.append(time.process_time() - start_cpu)
        start = time.perf_counter()
        unknown_share(tokenizer, ids, mask)
        share.append(time.perf_counter() - start)
    result = {
        **describe(packages=("torch", "transformers", "tokenizers")),
        "settings": vars(args) | {"paper_texts": PAPER_TEXTS},
        "tokenizer": type(tokenizer).__name__,
        "load_tokenizer_s": round(load_s, 2),
        "encode_texts_s": round(min(encode), 2),
        "encode_texts_s_runs": [round(t, 2) for t in encode],
        # CPU time of all the process's threads: steadier than wall time on a shared machine
        "encode_texts_cpu_s": round(min(encode_cpu), 2),
        "encode_texts_cpu_s_runs": [round(t, 2) for t in encode_cpu],
        "texts_per_s": round(args.texts / min(encode)),
        "unknown_share_s": round(min(share), 2),
        "tokens_checksum": int(ids.astype("int64").sum()),
    }
    print(
        f"{args.texts} texts, max_len {args.max_len} ({result['tokenizer']}): encode_texts "
        f"{result['encode_texts_s']} s wall, {result['encode_texts_cpu_s']} s CPU "
        f"({result['texts_per_s']} texts/s; runs {result['encode_texts_s_runs']}), [UNK] share {result['unknown_share_s']} s, "
        f"tokenizer load {result['load_tokenizer_s']} s"
    )
    write_json(Path(args.out), result)
    print(f"# wrote {args.out}")
    return result
