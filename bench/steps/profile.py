"""Where a training step's time goes: ``torch.profiler`` over the train stage's own loop
(``lttw.training.loop.train_classifier``), the same models and batches as the throughput
(``steps/common.py``).

Prints (and writes to bench/results/profile_train.json):
  * the step's time by phase (batch, forward, backward, clip_grad_norm, optimizer: the loop's
    ``record_function`` ranges), each unit of time counted once so that the phases add up to
    the profiled step: on CUDA the device time of each kernel (and memcpy / memset), charged
    to the phase of the op that launched it (not the ``aten::`` op and its kernels both); on
    the CPU the self CPU time of every op and range, charged to the phase it ran in. The
    JSON's ``phases_sum_over_step`` is that sum over the step (the profiler's own
    ``ProfilerStep`` ranges on the CPU, the wall clock on CUDA, where idle device time is the
    gap);
  * op counts per step (``aten::copy_``, casts, ``.item()`` syncs, all ``aten::`` ops), in
    total and by phase;
  * the time per op category over the profiled steps (matmuls, SDPA attention, normalisation,
    element-wise, optimiser, copies / indexing, ...), by self time: device time on CUDA, CPU
    time on the CPU;
  * the forward pass split by module (encoder, fusion + attention blocks, classifier);
  * the top ops;
  * the step's time extrapolated to a 60,000-sample epoch (``epoch_s``) beside the GPU
    target for the encoder (``target_epoch_s``: BERT-base 10 s, MiniLM 3 s), after the
    warm-up steps (compilation, CUDA context, allocator warm-up are not in it); the card's
    name is ``device_name``.

    python bench/train_step.py profile --quick                  # CPU, tiny shapes, < 60 s
    python bench/train_step.py profile --seq 64 --batch 32       # the default profile's step
    python bench/train_step.py profile --lengths-from data/sample/train.parquet
    python bench/train_step.py profile --encoder bert-base --precision bf16   # GPU, paper shape
    python bench/train_step.py profile --quick --encoder bert-base --precision bf16 --force-autocast
        # op counts under bf16 autocast on a CPU without native bf16 (slow: counts, not times)
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import torch
from common import RESULTS  # (bench/ is on sys.path: the script's folder)
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from lttw.device import make_runtime
from lttw.io import write_json
from lttw.training.bf16_weights import applies
from lttw.training.steps import compiles
from steps import common as step
from steps.phases import category, is_device, op_counts, phase_of, phase_times, rounded
from steps.throughput import TARGET_EPOCH_S

OUT = RESULTS / "profile_train.json"
EPOCH_SAMPLES = 60_000


class ProfiledClock(step.StepClock):
    """Advances the profiler's schedule on every step (log_every = 1)."""

    def __init__(self, prof, stop_at: int):
        super().__init__(stop_at=stop_at, log_every=1)
        self.prof = prof

    def log_metric(self, name, value):
        if name == "train/loss":
            self.prof.step()
        super().log_metric(name, value)


def label_forward(model) -> list:
    """record_function ranges around the forward of the encoder, the fusion + attention
    blocks and the classifier (hooks; removed by the caller)."""
    handles = []

    def wrap(module, label):
        state = {}

        def pre(mod, args, kwargs=None):
            state["rf"] = record_function(label)
            state["rf"].__enter__()

        def post(mod, args, out):
            state.pop("rf").__exit__(None, None, None)

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))

    wrap(model.encoder, "forward: encoder")
    for i, block in enumerate(model.blocks):
        wrap(block, f"forward: attention block {i}")
    wrap(model.classifier, "forward: classifier")
    return handles


def parse(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="train_step.py profile", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="CPU smoke settings (seq 32, batch 8)")
    step.add_step_arguments(ap)
    ap.add_argument("--encoder", default="minilm", choices=step.ENCODERS)
    ap.add_argument("--variant", default="lttw", choices=sorted(step.VARIANTS))
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--warmup", type=int, default=None, help="unprofiled steps first (3; quick 1)")
    ap.add_argument("--steps", type=int, default=None, help="profiled steps (5; quick 2)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument(
        "--force-autocast",
        action="store_true",
        help="bf16 autocast even on a CPU without native bf16 (for op counts: slow there)",
    )
    ap.add_argument(
        "--compile",
        default="off",
        choices=["off", "auto", "on"],
        help="train.compile for the profiled step (off: eager, with the module labels)",
    )
    ap.add_argument("--trace", default=None, help="also write a Chrome trace to this file")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    base = step.QUICK if args.quick else step.FULL
    args.seq, args.batch = args.seq or base["seq"], args.batch or base["batch"]
    if args.warmup is None:
        args.warmup = 1 if args.quick else 3
    if args.steps is None:
        args.steps = 2 if args.quick else 5
    return args


def main(argv=None) -> dict:
    args = parse(argv)
    seq, batch, warmup, steps = args.seq, args.batch, args.warmup, args.steps
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = step.step_settings(
        args, args.precision, compile={"off": False, "on": True}.get(args.compile, "auto")
    )
    rt = make_runtime(cfg)
    if args.force_autocast:
        rt.bf16 = True
    compiled = compiles(cfg, rt)
    cuda = rt.device.type == "cuda"
    info = step.device_info(rt.device)
    model, data, _, source = step.model_and_data(
        args, args.encoder, args.variant, warmup + steps + 1
    )
    handles = [] if compiled else label_forward(model)  # hooks would break the graph
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    captured = {}

    def ready(p):  # called once, when the active steps are done
        captured["events"] = p.key_averages()
        captured["tree"] = list(p.events())
        if args.trace:
            p.export_chrome_trace(args.trace)

    with profile(
        activities=activities,
        on_trace_ready=ready,
        record_shapes=False,
        schedule=schedule(wait=0, warmup=warmup, active=steps, repeat=1),
    ) as prof:
        clock = ProfiledClock(prof, stop_at=warmup + steps)
        step.run_steps(model, data, cfg, rt, clock)
    for h in handles:
        h.remove()
    wall = clock.times[-1] - clock.times[warmup - 1] if warmup else None

    events, tree = captured["events"], captured["tree"]
    clock_name = "device (CUDA) time of kernels" if cuda else "CPU self time"
    ops = []
    for e in events:
        if e.key.startswith(("forward: ", "ProfilerStep", "lttw.")) or is_device(e):
            continue
        t = (e.self_device_time_total if cuda else e.self_cpu_time_total) / 1e3 / steps
        if t > 0:
            ops.append((e.key, t, e.count // steps))
    # every unit of time once, attributed to the loop phase and to an op category
    phase_us, event_us = phase_times(tree, cuda)
    by_phase = {k: v / 1e3 / steps for k, v in phase_us.items()}
    by_cat: dict[str, float] = defaultdict(float)
    for e in tree:
        t = event_us.get(e.id, 0.0) / 1e3 / steps
        if t <= 0 or e.name.startswith(("forward: ", "ProfilerStep", "lttw.")):
            continue
        if phase_of(e) in ("forward", "backward"):
            by_cat[category(e.name)] += t
    total = sum(by_phase.values())
    # the step it must add up to: the profiler's own step ranges on the CPU; on CUDA the
    # wall clock (the loop syncs every step here), the device being idle in the gap
    profiled = sum(e.cpu_time_total for e in tree if e.name.startswith("ProfilerStep"))
    step_ms = (1e3 * wall if cuda and wall else profiled / 1e3) / steps
    forward = {
        e.key: e.cpu_time_total / 1e3 / steps for e in events if e.key.startswith("forward: ")
    }
    result = {
        **info,
        "settings": {
            "encoder": args.encoder,
            "encoder_config_source": source,
            "variant": args.variant,
            "precision": args.precision,
            "bf16_autocast": rt.bf16,
            # the step casts all weights to bf16 at once (training.bf16_weights)
            "bf16_weights": applies(rt, compiled),
            "seq": seq,
            "batch": batch,
            "warmup": warmup,
            "steps": steps,
            "lengths_from": args.lengths_from,
        },
        "clock": clock_name,
        "compiled": compiled,
        "step_ms_wall": None if wall is None else round(1e3 * wall / steps, 2),
        "step_ms": round(step_ms, 2),
        "step_ms_source": "wall clock" if cuda and wall else "profiler ProfilerStep ranges",
        # a 60,000-sample epoch at this step's time (the profiler's overhead included)
        "epoch_s": round(step_ms / 1e3 * -(-EPOCH_SAMPLES // batch), 2),
        "target_epoch_s": TARGET_EPOCH_S.get(args.encoder),
        "ms_per_step_by_phase": rounded(by_phase),
        "phases_sum_over_step": round(total / max(step_ms, 1e-9), 3),
        "op_counts": op_counts(tree, steps),
        "forward_backward_ms_per_step_by_category": rounded(by_cat),
        "forward_ms_per_step_cpu_inclusive": {k: round(v, 2) for k, v in forward.items()},
        "top_ops": [
            {"op": k, "ms_per_step": round(t, 3), "calls_per_step": c}
            for k, t, c in sorted(ops, key=lambda x: -x[1])[: args.top]
        ],
    }

    print(
        f"# {info['device_name']} | {args.encoder} {args.variant} {args.precision} "
        f"(autocast {'bf16' if rt.bf16 else 'off'}) | seq {seq} batch {batch} | "
        f"{steps} profiled steps after {warmup}{' | compiled' if compiled else ''}"
        + (f" | wall {result['step_ms_wall']} ms/step (profiler on)" if wall else "")
    )
    target = result["target_epoch_s"]
    print(
        f"# {result['epoch_s']} s per {EPOCH_SAMPLES:,}-sample epoch"
        + (f" (GPU target <= {target} s)" if target else "")
    )
    print(f"\n{clock_name} per step, by phase of the training step")
    for k, v in result["ms_per_step_by_phase"].items():
        print(f"  {k:22} {v:10.1f} ms  {100 * v / total:5.1f}%")
    print(
        f"  {'total':22} {total:10.1f} ms  = {100 * result['phases_sum_over_step']:.1f}% of the "
        f"step ({step_ms:.1f} ms, {result['step_ms_source']})"
    )
    counts = result["op_counts"]["per_step"]
    print("\nop calls per step: " + ", ".join(f"{k} {v:g}" for k, v in counts.items()))
    fb = sum(by_cat.values())
    print(f"\nforward + backward ({fb:.1f} ms) by op category")
    for k, v in result["forward_backward_ms_per_step_by_category"].items():
        print(f"  {k:22} {v:10.1f} ms  {100 * v / max(fb, 1e-9):5.1f}%")
    print("\nforward pass by module (CPU inclusive time per step; on CUDA: launch time)")
    for k, v in forward.items():
        print(f"  {k:30} {v:10.1f} ms")
    print(f"\ntop {args.top} ops ({clock_name}, ms per step)")
    for row in result["top_ops"]:
        print(f"  {row['op'][:60]:60} {row['ms_per_step']:10.2f}  x{row['calls_per_step']}")
    if args.trace:
        print(f"# trace: {args.trace}")
    out = Path(args.out)
    write_json(out, result)  # atomic: a killed run leaves the old file
    print(f"# wrote {out}")
    return result
