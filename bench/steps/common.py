"""What the step benchmarks share: the models (LTTW / LTTW-M around MiniLM-L6 or a
BERT-base-sized encoder, random weights), synthetic or real-length batches, and the train
stage's own loop (``lttw.training.loop.train_classifier``) driven for a counted number of
steps by a ``live`` stand-in that stops it before validation or a checkpoint."""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from common import (  # noqa: E402  (bench/ is on sys.path)
    architecture,
    describe,  # noqa: E402
    minilm_folder,
)

from lttw import models  # noqa: E402,F401  (registers the variants)
from lttw.data.batching import Batchable  # noqa: E402
from lttw.device import Runtime, cpu_supports_bf16  # noqa: E402
from lttw.models.lttw import LTTWClassifier, LTTWConfig  # noqa: E402
from lttw.settings import TrainSettings  # noqa: E402
from lttw.training import loop as training  # noqa: E402
from lttw.training.loop import train_classifier  # noqa: E402


def _quiet_progress(*args, **kwargs):  # no progress bar inside the timed loop
    from lttw.progress import progress

    return progress(*args, **{**kwargs, "disable": True})


training.progress = _quiet_progress

N_LABELS, SLOTS, RANK = 4, 20, 5  # AG News; k + s = 20, rank z = 5
#: all-MiniLM-L6-v2's architecture (its config.json), used when the package is not installed
MINILM_FALLBACK = {
    "model_type": "bert",
    "vocab_size": 30522,
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "hidden_act": "gelu",
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}
VARIANTS = {"lttw": "concat", "lttw-m": "none"}  # variant -> model.fusion
ENCODERS = ("minilm", "bert-base")
FULL = {"seq": 128, "batch": 128}
QUICK = {"seq": 32, "batch": 8}


class Stop(Exception):
    """Raised by the step clock once the counted steps are done."""


class StepClock:
    """``live`` stand-in for ``train_classifier``: it calls ``log_metric("train/loss", ...)``
    right after the loss ``.item()`` (a device sync) every ``log_every`` steps."""

    def __init__(self, stop_at: int, log_every: int):
        self.stop_at, self.log_every, self.times = stop_at, log_every, []

    def log_metric(self, name, value):
        if name == "train/loss":
            self.times.append(time.perf_counter())
            if len(self.times) * self.log_every >= self.stop_at:
                raise Stop

    def next_step(self):
        pass


def add_step_arguments(ap: argparse.ArgumentParser) -> None:
    """The options both the throughput and the profile take."""
    ap.add_argument("--seq", type=int, help="tokens per sample (128; quick 32)")
    ap.add_argument("--batch", type=int, help="global batch (128; quick 8)")
    ap.add_argument(
        "--encoder-dir",
        default=None,
        help="MiniLM folder (config.json is enough); default: the embedded package",
    )
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument(
        "--lengths-from",
        default=None,
        metavar="PATH",
        help="real token lengths instead of full-length rows: a .parquet/.csv with a "
        "text column (e.g. data/sample/train.parquet) or the pipeline's "
        "data/tokens/tokens.safetensors; batches are then trimmed as in the pipeline",
    )


def encoder_config(name: str, encoder_dir: str | None) -> tuple[dict, str]:
    """(architecture dict for ``LTTWConfig.encoder_config``, where it came from)."""
    from transformers import AutoConfig, BertConfig

    if name == "bert-base":
        cfg, source = BertConfig(), "transformers BertConfig() defaults (bert-base)"
    else:
        folder = encoder_dir or minilm_folder()
        if folder is None:
            return dict(MINILM_FALLBACK), "built-in copy of all-MiniLM-L6-v2's config.json"
        cfg, source = AutoConfig.from_pretrained(folder), f"{folder}/config.json"
    return architecture(json.loads(cfg.to_json_string())), source


def build(enc_cfg: dict, variant: str, seq: int) -> LTTWClassifier:
    fusion = VARIANTS[variant]
    return LTTWClassifier(
        LTTWConfig(
            n_labels=N_LABELS,
            encoder_config=enc_cfg,
            factor_slots=SLOTS if fusion != "none" else 0,
            rank=RANK if fusion != "none" else 0,
            fusion=fusion,
            attention="linformer",
            linformer_k=32,
            share_kv=True,
            depth=1,
            heads=4,
            ffn_mult=4,
            dropout=0.1,
            max_len=seq,
        )
    )


def synthetic(
    n: int,
    seq: int,
    vocab: int,
    with_factors: bool,
    seed: int = 0,
    lengths: torch.Tensor | None = None,
) -> Batchable:
    """Full-length sequences (no padding: the paper-shaped worst case), or, with ``lengths``
    (real token counts), each row as long as a length drawn from them, padded to ``seq``."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, vocab, (n, seq), generator=g, dtype=torch.int32)
    mask = torch.ones(n, seq, dtype=torch.int8)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    if lengths is not None:
        rows = lengths.clamp(2, seq)[torch.randint(0, len(lengths), (n,), generator=g)]
        mask = (torch.arange(seq)[None, :] < rows[:, None]).to(torch.int8)
        ids[torch.arange(n), rows - 1] = 102
        ids = ids * mask  # [PAD] = 0
    factors = torch.rand(n, SLOTS, RANK, generator=g) if with_factors else None
    return Batchable(ids, mask, factors, torch.randint(0, N_LABELS, (n,), generator=g))


def real_lengths(path: str, seq: int, encoder_dir: str | None) -> torch.Tensor:
    """Token counts (with [CLS] and [SEP], truncated at ``seq``) of real texts: a tokens
    file of the pipeline (``data/tokens/tokens.safetensors``: its attention masks) or a
    .parquet / .csv with a ``text`` column, tokenised with MiniLM's tokenizer."""
    file = Path(path)
    if file.suffix == ".safetensors":
        from safetensors.numpy import load_file

        masks = [m for k, m in load_file(file).items() if k.endswith("attention_mask")]
        return torch.from_numpy(np.concatenate([m.sum(1) for m in masks])).long().clamp(max=seq)
    import pandas as pd
    from transformers import AutoTokenizer

    frame = pd.read_parquet(file) if file.suffix == ".parquet" else pd.read_csv(file)
    folder = encoder_dir or minilm_folder()
    if folder is None:
        raise SystemExit(
            "--lengths-from a text file needs MiniLM's tokenizer: pass --encoder-dir DIR"
        )
    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(frame["text"].astype(str).tolist(), truncation=True, max_length=seq)
    return torch.tensor([len(x) for x in enc["input_ids"]])


def model_and_data(args, encoder: str, variant: str, steps: int):
    """(model, ``steps`` batches of data, encoder config, where the config came from) for
    ``args.seq`` / ``args.batch`` / ``args.encoder_dir`` / ``args.lengths_from``."""
    enc_cfg, source = encoder_config(encoder, args.encoder_dir)
    torch.manual_seed(0)
    model = build(enc_cfg, variant, args.seq)
    lengths = None
    if args.lengths_from:
        lengths = real_lengths(args.lengths_from, args.seq, args.encoder_dir)
    data = synthetic(
        args.batch * steps,
        args.seq,
        enc_cfg["vocab_size"],
        VARIANTS[variant] != "none",
        lengths=lengths,
    )
    return model, data, enc_cfg, source


def device_info(device: torch.device) -> dict:
    """The machine (``common.describe``) and whether its CPU computes bf16 natively."""
    return {**describe(device, ("torch", "transformers")), "cpu_native_bf16": cpu_supports_bf16()}


def step_settings(args, precision: str, log_every: int = 1, compile=False) -> TrainSettings:
    """The train stage's settings for one epoch of ``args.batch`` rows on ``args.device``."""
    return TrainSettings(
        device=args.device,
        bf16=precision == "bf16",
        epochs=1,
        batch_size=args.batch,
        eval_batch_size=args.batch,
        lr=2e-5,
        head_lr=1e-3,
        patience=0,
        log_every=log_every,
        distributed="off",
        num_threads=args.threads,
        compile=compile,
    )


def run_steps(model, data: Batchable, cfg: TrainSettings, rt: Runtime, clock: StepClock) -> None:
    """``train_classifier`` on ``data`` until ``clock`` stops it."""
    with tempfile.TemporaryDirectory() as ckpt:
        try:
            train_classifier(
                model,
                data,
                data,
                cfg,
                seed=0,
                rt=rt,
                checkpoint_dir=ckpt,
                live=clock,
                fingerprint="bench",
                checkpoint_every_s=1e9,
            )
        except Stop:
            pass


def round_up(x: int, k: int) -> int:
    return max(k, math.ceil(x / k) * k)
