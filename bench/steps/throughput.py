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

    python bench/train_step.py throughput --quick     # CPU, tiny shapes, < 60 s
    python bench/train_step.py throughput             # GPU, paper shape (seq 128, batch 128)
    python bench/train_step.py throughput --peak-tflops 989 --compile off,on --merge
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from common import RESULTS  # (bench/ is on sys.path: the script's folder)

from lttw.data.batching import Batchable
from lttw.device import make_runtime
from lttw.io import write_json
from lttw.settings import TrainSettings
from steps.common import (
    ENCODERS,
    FULL,
    QUICK,
    VARIANTS,
    StepClock,
    add_step_arguments,
    device_info,
    model_and_data,
    round_up,
    run_steps,
    step_settings,
)
from steps.flops import flops_of_trimmed_batches, flops_per_sample

OUT = RESULTS / "train_throughput.json"
H100_BF16_DENSE_TFLOPS = 989.0
#: GPU targets, seconds per 60,000-sample epoch (paper: 109.87 s on an RTX 4070 Super)
TARGET_EPOCH_S = {"bert-base": 10.0, "minilm": 3.0}
FULL_RUN = {**FULL, "steps": 20, "warmup": 5, "compile": "off,on", "threads": 0}
QUICK_RUN = {**QUICK, "steps": 2, "warmup": 1, "compile": "off", "threads": 1}


def measure(model, data: Batchable, args, precision: str, warmup: int) -> dict:
    """Run ``train_classifier`` for warm-up + measured steps; return the timing row. The
    settings keep the loop eager (``compile`` false): a compiled row's model was compiled
    in place before (``model.compile()``)."""
    cfg = step_settings(args, precision, log_every=args.log_every)
    rt = make_runtime(cfg)
    warm, steps = round_up(warmup, args.log_every), round_up(args.steps, args.log_every)
    clock = StepClock(stop_at=warm + steps, log_every=args.log_every)
    if rt.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(rt.device)
    start = time.perf_counter()
    run_steps(model, data, cfg, rt, clock)
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


def _parse_list(text: str, allowed) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad:
        raise SystemExit(f"unknown value(s) {bad}; choose from {sorted(allowed)}")
    return items


def parse(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="train_step.py throughput", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="CPU smoke settings: seq 32, batch 8, 1 warm-up + 2 measured steps, "
        "no compile, 1 thread (< 60 s on 2 cores)",
    )
    add_step_arguments(ap)
    ap.add_argument("--steps", type=int, help="measured steps after warm-up (20; quick 2)")
    ap.add_argument(
        "--warmup", type=int, help="warm-up steps (5; quick 1); compiled rows use at least 3"
    )
    ap.add_argument("--samples", type=int, default=60_000, help="epoch size to extrapolate to")
    ap.add_argument("--encoders", default=",".join(ENCODERS))
    ap.add_argument("--variants", default="lttw,lttw-m")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument(
        "--compile",
        help="off,on | off | on (default off,on; quick off: inductor needs minutes on 2 CPU cores)",
    )
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
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep rows of an existing --out (same device) that this run does not redo",
    )
    args = ap.parse_args(argv)
    for key, value in (QUICK_RUN if args.quick else FULL_RUN).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv=None) -> dict:
    args = parse(argv)
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
    rows = []
    flops_cache: dict = {}
    bf16_ok = make_runtime(TrainSettings(device=args.device, bf16=True, distributed="off")).bf16
    for enc in encoders:
        for variant in variants:
            for precision in precisions:
                for compiled in compiles:
                    row = {"encoder": enc, "variant": variant, "precision": precision}
                    row.update(compile=compiled, seq=args.seq, batch=args.batch)
                    if precision == "bf16" and not bf16_ok:
                        row["skipped"] = (
                            f"no native bf16 on this {device.type} (make_runtime keeps fp32; "
                            "emulated bf16 autocast is far slower)"
                        )
                    else:
                        run_row(row, args, device, peak, paper_shape, flops_cache)
                    rows.append(row)
                    _print_row(row)
    result = {
        **info,
        "settings": {
            k: getattr(args, k)
            for k in ("quick", "seq", "batch", "steps", "warmup", "samples", "log_every", "threads")
        },
        "peak_tflops": peak,
        "paper_shape": paper_shape,
        "notes": NOTES,
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


def run_row(row: dict, args, device, peak, paper_shape: bool, flops_cache: dict) -> None:
    """Build the row's model and data, count its FLOPs, time its steps: fills ``row``."""
    enc, variant, compiled = row["encoder"], row["variant"], row["compile"]
    warmup = max(args.warmup, 3) if compiled else args.warmup
    steps = round_up(warmup, args.log_every) + round_up(args.steps, args.log_every)
    model, data, _, source = model_and_data(args, enc, variant, steps)
    key = (enc, variant)
    if key not in flops_cache:
        flops_cache[key] = (
            flops_of_trimmed_batches(model, data, args.batch, device)
            if args.lengths_from
            else (flops_per_sample(model, data, device), args.seq)
        )
    fps, width = flops_cache[key]
    if compiled:
        torch._dynamo.reset()
        model.compile()
    row.update(
        encoder_config_source=source,
        lengths_from=args.lengths_from,
        mean_batch_width=round(width, 1),
        params_m=round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
        gflops_per_sample_fwd_bwd=round(fps / 1e9, 3),
    )
    row.update(measure(model, data, args, row["precision"], warmup))
    tflops = fps * row["samples_per_s"] / 1e12
    row["achieved_tflops"] = round(tflops, 4)
    row["mfu"] = round(tflops / peak, 4) if peak else None
    target = TARGET_EPOCH_S[enc]
    row["target_epoch_s_gpu"] = target
    # the MFU (vs peak_tflops) that an epoch of `samples` in `target` seconds needs
    row["mfu_needed_for_target"] = (
        round(fps * args.samples / (target * peak * 1e12), 4) if peak else None
    )
    row["target_met"] = row["epoch_s"] <= target if paper_shape and device.type == "cuda" else None
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()


NOTES = [
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
]


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
