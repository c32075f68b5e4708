"""Where a training step's time goes: ``torch.profiler`` over the train stage's own loop
(``lttw.training.loop.train_classifier``), the same models and batches as ``train_throughput.py``.

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
  * the top ops.

    python bench/profile_train.py --quick                       # CPU, tiny shapes, < 60 s
    python bench/profile_train.py --seq 64 --batch 32            # the default profile's step
    python bench/profile_train.py --lengths-from data/sample/train.parquet
    python bench/profile_train.py --encoder bert-base --precision bf16   # GPU, paper shape
    python bench/profile_train.py --quick --encoder bert-base --precision bf16 --force-autocast
        # op counts under bf16 autocast on a CPU without native bf16 (slow: counts, not times)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from torch.autograd import DeviceType  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function, schedule  # noqa: E402
from train_throughput import (  # noqa: E402
    FULL,
    QUICK,
    VARIANTS,
    StepClock,
    _Stop,
    build,
    device_info,
    encoder_config,
    real_lengths,
    synthetic,
)

from lttw.device import make_runtime  # noqa: E402
from lttw.io import write_json  # noqa: E402
from lttw.settings import TrainSettings  # noqa: E402
from lttw.training.bf16_weights import applies  # noqa: E402
from lttw.training.loop import compiles, train_classifier  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "profile_train.json"

#: op-name fragments -> category (first match wins; names are lower-cased)
CATEGORIES = [
    (
        "attention (SDPA)",
        ("scaled_dot_product", "flash", "efficient_attention", "_cudnn_attention"),
    ),
    ("optimizer", ("adam", "optimizer", "_foreach")),
    (
        "matmul",
        (
            "aten::mm",
            "aten::addmm",
            "aten::bmm",
            "aten::baddbmm",
            "aten::matmul",
            "aten::linear",
            "einsum",
            "gemm",
            "sgemm",
            "cublas",
            "cutlass",
            "sm90_xmma",
            "ampere_",
            "matmul",
        ),
    ),
    ("normalisation", ("layer_norm", "layernorm")),
    (
        "copies / indexing",
        (
            "copy",
            "aten::to",
            "index",
            "gather",
            "embedding",
            "cat",
            "pin_memory",
            "contiguous",
            "clone",
            "slice",
            "select",
            "memcpy",
            "memset",
            "fill",
            "zero",
            "scatter",
        ),
    ),
    ("softmax / loss", ("softmax", "cross_entropy", "nll_loss", "log_softmax")),
    (
        "element-wise",
        (
            "gelu",
            "add",
            "mul",
            "div",
            "tanh",
            "dropout",
            "bernoulli",
            "where",
            "sub",
            "pow",
            "sqrt",
            "exp",
            "relu",
            "clamp",
            "norm",
            "sum",
            "mean",
            "elementwise",
            "vectorized",
            "reduce",
        ),
    ),
]


OTHER = "other (outside the step's phases)"
#: op counts reported per step (and by phase): copies, casts, device-to-host syncs
COUNTED = ("aten::copy_", "aten::_to_copy", "aten::item", "aten::_local_scalar_dense")


def phase_of(event) -> str:
    """The loop phase an event ran in: the ``lttw.*`` range around it (see
    ``training.loop._step``; a range is in its own phase), or ``backward`` for ops the autograd
    engine ran (on CUDA they run in the engine's own thread, outside the loop's ranges)."""
    node = event
    while node is not None:
        if node.name.startswith("autograd::engine"):
            return "backward"
        if node.name.startswith("lttw."):
            return node.name[len("lttw.") :]
        node = node.cpu_parent
    return OTHER


def _is_device(event) -> bool:
    return event.device_type != DeviceType.CPU


def phase_times(tree: list, cuda: bool) -> tuple[dict[str, float], dict[int, float]]:
    """(us by phase, us by event id) over the profiled steps, each unit of time counted once.

    CUDA: the duration of every device event (kernels, memcpy, memset; not the user
    annotations that mirror the ranges), charged to the phase of the CPU op that launched it
    (its correlation id), ``other`` where no op is linked. CPU: the self time of every CPU
    event (ops, the phase ranges, the ``ProfilerStep`` ranges), so they add up to the steps'
    total."""
    by_phase: dict[str, float] = defaultdict(float)
    by_event: dict[int, float] = defaultdict(float)
    if cuda:
        ops = {e.id: e for e in tree if not _is_device(e)}
        for e in tree:
            if not _is_device(e) or e.is_user_annotation or e.name.startswith("lttw."):
                continue
            launcher = ops.get(e.linked_correlation_id)
            t = e.time_range.elapsed_us()
            by_phase[phase_of(launcher) if launcher is not None else OTHER] += t
            if launcher is not None:
                by_event[launcher.id] += t
        return by_phase, by_event
    for e in tree:
        if _is_device(e) or e.is_async:
            continue
        by_phase[phase_of(e)] += e.self_cpu_time_total
        by_event[e.id] += e.self_cpu_time_total
    return by_phase, by_event


def op_counts(tree: list, steps: int) -> dict:
    """Calls per step of the ``COUNTED`` ops and of all ``aten::`` ops, in total and by phase."""
    total: dict[str, int] = defaultdict(int)
    by_phase: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for e in tree:
        if _is_device(e) or not e.name.startswith("aten::"):
            continue
        for key in (e.name, "all aten:: ops"):
            if key in COUNTED or key == "all aten:: ops":
                total[key] += 1
                by_phase[phase_of(e)][key] += 1
    per_step = {k: round(total.get(k, 0) / steps, 1) for k in (*COUNTED, "all aten:: ops")}
    return {
        "per_step": per_step,
        "per_step_by_phase": {
            phase: {k: round(v / steps, 1) for k, v in sorted(counts.items())}
            for phase, counts in sorted(by_phase.items())
        },
    }


def _rounded(d: dict) -> dict:
    return {k: round(v, 2) for k, v in sorted(d.items(), key=lambda kv: -kv[1])}


def category(name: str) -> str:
    low = name.lower()
    for label, fragments in CATEGORIES:
        if any(f in low for f in fragments):
            return label
    return "other"


class ProfiledClock(StepClock):
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


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="CPU smoke settings (seq 32, batch 8)")
    ap.add_argument("--encoder", default="minilm", choices=["minilm", "bert-base"])
    ap.add_argument("--variant", default="lttw", choices=sorted(VARIANTS))
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--seq", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--warmup", type=int, default=None, help="unprofiled steps first (3; quick 1)")
    ap.add_argument("--steps", type=int, default=None, help="profiled steps (5; quick 2)")
    ap.add_argument(
        "--lengths-from",
        default=None,
        metavar="PATH",
        help="real token lengths (see train_throughput.py --help)",
    )
    ap.add_argument("--encoder-dir", default=None)
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
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
    base = QUICK if args.quick else FULL
    seq, batch = args.seq or base["seq"], args.batch or base["batch"]
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 3)
    steps = args.steps if args.steps is not None else (2 if args.quick else 5)
    if args.threads:
        torch.set_num_threads(args.threads)

    cfg = TrainSettings(
        device=args.device,
        bf16=args.precision == "bf16",
        epochs=1,
        batch_size=batch,
        eval_batch_size=batch,
        lr=2e-5,
        head_lr=1e-3,
        patience=0,
        log_every=1,
        distributed="off",
        num_threads=args.threads,
        compile={"off": False, "on": True}.get(args.compile, "auto"),
    )
    rt = make_runtime(cfg)
    if args.force_autocast:
        rt.bf16 = True
    compiled = compiles(cfg, rt)
    cuda = rt.device.type == "cuda"
    info = device_info(rt.device)
    enc_cfg, source = encoder_config(args.encoder, args.encoder_dir)
    torch.manual_seed(0)
    model = build(enc_cfg, args.variant, seq)
    lengths = real_lengths(args.lengths_from, seq, args.encoder_dir) if args.lengths_from else None
    data = synthetic(
        batch * (warmup + steps + 1),
        seq,
        enc_cfg["vocab_size"],
        VARIANTS[args.variant] != "none",
        lengths=lengths,
    )
    handles = [] if compiled else label_forward(model)  # hooks would break the graph
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    captured = {}

    def ready(p):  # called once, when the active steps are done
        captured["events"] = p.key_averages()
        captured["tree"] = list(p.events())
        if args.trace:
            p.export_chrome_trace(args.trace)

    with (
        profile(
            activities=activities,
            on_trace_ready=ready,
            record_shapes=False,
            schedule=schedule(wait=0, warmup=warmup, active=steps, repeat=1),
        ) as prof,
        tempfile.TemporaryDirectory() as ckpt,
    ):
        clock = ProfiledClock(prof, stop_at=warmup + steps)
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
                fingerprint="profile",
                checkpoint_every_s=1e9,
            )
        except _Stop:
            pass
    for h in handles:
        h.remove()
    wall = clock.times[-1] - clock.times[warmup - 1] if warmup else None

    events, tree = captured["events"], captured["tree"]
    clock_name = "device (CUDA) time of kernels" if cuda else "CPU self time"
    ops = []
    for e in events:
        if e.key.startswith(("forward: ", "ProfilerStep", "lttw.")) or _is_device(e):
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
        "ms_per_step_by_phase": _rounded(by_phase),
        "phases_sum_over_step": round(total / max(step_ms, 1e-9), 3),
        "op_counts": op_counts(tree, steps),
        "forward_backward_ms_per_step_by_category": _rounded(by_cat),
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


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
