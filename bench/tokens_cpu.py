"""CPU benchmark of the ``tokens`` stage's work at the paper profile's sizes: the encoder's
tokenizer over 52,000 + 4,000 + 3,600 = 59,600 AG News texts (train, test and predict
samples) at max_len 128, as ``stages/tokens.py`` calls it (``encode_texts``, then the
[UNK] share of the train sample), best of ``--repeats``, in wall and in CPU time. The texts are the local AG News
train and test rows pooled, in file order (the stage's sample is a class-balanced draw of
them; tokenising does not depend on which rows).

    python bench/tokens_cpu.py                       # writes bench/results/tokens_cpu.json
    python bench/tokens_cpu.py --texts 14900         # a quarter of the paper's sizes
    PYTHONPATH=/path/to/other/src python bench/tokens_cpu.py --out before.json   # another source
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from machine import describe  # noqa: E402  (bench/ is on sys.path: the script's folder)

from lttw.encoder.pretrained import resolve_encoder
from lttw.encoder.tokenizer import load_tokenizer
from lttw.encoder.tokens import encode_texts, unknown_share
from lttw.io import write_json

ROOT = Path(__file__).resolve().parents[1]
#: the paper profile's samples: train 52,000, test 4,000, predict 3,600
PAPER_TEXTS = 52_000 + 4_000 + 3_600


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


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(ROOT.parent / "shared" / "datasets"))
    ap.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--texts", type=int, default=PAPER_TEXTS)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "tokens_cpu.json"))
    args = ap.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
