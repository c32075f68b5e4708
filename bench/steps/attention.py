"""One attention block, Linformer (K=32) vs multi-head attention (SDPA): time and peak memory
of forward + backward as the sequence grows.

The block is the pipeline's own ``lttw.models.attention.AttentionBlock`` (attention + residual +
LayerNorm + feed-forward, train mode, dropout 0.1 as in params.yaml) with

* ``linformer``   ``LinformerSelfAttention``, keys/values projected n -> K, shared E (eq. 13);
* ``mha``         ``MultiHeadSelfAttention`` exactly as the pipeline calls it: it always passes
                  the key-padding mask to SDPA, so CUDA cannot use the flash kernel (flash takes
                  no mask) and runs the memory-efficient kernel (or math);
* ``mha_nomask``  the same module with the mask dropped (what a batch without padding could
                  do): SDPA may pick flash. This is where flash attention is strongest.

Every row records which SDPA kernel actually ran (the aten op seen by a dispatch mode; "math"
when SDPA decomposed into bmm + softmax, e.g. on the CPU with dropout > 0, which the CPU flash
kernel does not take).
Inputs: x (batch, n, d) with requires_grad, an all-ones mask; the gradient of a random
projection of the output is back-propagated. Time: median of ``--reps`` runs after warm-up.
Memory: CUDA ``max_memory_allocated`` minus what was allocated before the run (activations,
gradients, workspaces: the peak the run adds). CPU: the resident-set high-water mark
(``VmHWM``) reset through ``/proc/self/clear_refs`` before each run, minus the RSS before it,
with glibc told to serve every allocation >= 64 KiB by mmap so that freed tensors leave the RSS
(Linux only; ``null`` elsewhere).

    python bench/train_step.py attention --quick  # CPU: n 128..1024, d 64, batch 2 (< 60 s)
    python bench/train_step.py attention          # GPU: n 512..16384, d 768, batch 8, bf16
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import statistics
import time
from pathlib import Path

import torch
from common import (
    RESULTS,  # (bench/ is on sys.path: the script's folder)
    describe,
)
from torch.utils._python_dispatch import TorchDispatchMode

from lttw.io import write_json
from lttw.models.attention import AttentionBlock, MultiHeadSelfAttention

OUT = RESULTS / "attention_scaling.json"
KINDS = ("linformer", "mha", "mha_nomask")
SDPA_OPS = {
    "aten._scaled_dot_product_flash_attention": "flash",
    "aten._scaled_dot_product_flash_attention_for_cpu": "flash_cpu",
    "aten._scaled_dot_product_efficient_attention": "efficient",
    "aten._scaled_dot_product_cudnn_attention": "cudnn",
    "aten._scaled_dot_product_attention_math": "math",
    "aten._scaled_dot_product_fused_attention_overrideable": "overrideable",
}


class _NoMaskMHA(MultiHeadSelfAttention):
    """The pipeline's MHA with the key-padding mask left out (flash-eligible on CUDA)."""

    def forward(self, x, attention_mask, first_only=False, output_attentions=False):
        q, k, v = (self._split(proj(x)) for proj in (self.query, self.key, self.value))
        return self._merge(self._attend(q, k, v)[0])


class _KernelSpy(TorchDispatchMode):
    """Which SDPA implementation ran (its aten op name)."""

    def __init__(self):
        super().__init__()
        self.kernels: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if name in SDPA_OPS:
            self.kernels.add(SDPA_OPS[name])
        return func(*args, **(kwargs or {}))


def block(kind: str, d: int, heads: int, n: int, k: int, dropout: float) -> AttentionBlock:
    blk = AttentionBlock(
        d,
        "linformer" if kind == "linformer" else "mha",
        heads,
        4,
        dropout,
        max_seq=n,
        linformer_k=k,
        share_kv=True,
    )
    if kind == "mha_nomask":
        old = blk.attn
        blk.attn = _NoMaskMHA(d, heads, dropout)
        blk.attn.load_state_dict(old.state_dict())
    return blk


# --- CPU peak memory: RSS high-water mark, reset per run (Linux) -----------------------------


def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 * 1024)  # M_MMAP_THRESHOLD: fixed, disables the dynamic threshold
        return libc
    except (OSError, AttributeError):
        return None


def _status_kib(field: str) -> int | None:
    try:
        for line in open("/proc/self/status", encoding="utf-8"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class CpuPeak:
    method = "VmHWM after /proc/self/clear_refs reset, minus VmRSS before (glibc mmap >= 64 KiB)"

    def __init__(self):
        self.libc = _libc()
        self.ok = self.libc is not None and self._reset()

    @staticmethod
    def _reset() -> bool:
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
                f.write("5")  # 5: reset the peak RSS (VmHWM) to the current RSS
            return True
        except OSError:
            return False

    def start(self) -> None:
        gc.collect()
        if self.libc is not None:
            self.libc.malloc_trim(0)
        self._reset()
        self.base = _status_kib("VmRSS")

    def peak_mib(self) -> float | None:
        hwm = _status_kib("VmHWM")
        return None if hwm is None or self.base is None else (hwm - self.base) / 1024


# --- one measurement ------------------------------------------------------------------------


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_once(blk, x, mask, grad, autocast):
    with autocast():
        out = blk(x, mask)
    out.backward(grad)
    x.grad = None
    for p in blk.parameters():
        p.grad = None


def measure(kind: str, n: int, args, device, cpu_peak: CpuPeak | None) -> dict:
    torch.manual_seed(0)
    blk = block(kind, args.d, args.heads, n, args.k, args.dropout).to(device).train()
    x = torch.randn(args.batch, n, args.d, device=device, requires_grad=True)
    mask = torch.ones(args.batch, n, dtype=torch.long, device=device)
    grad = torch.randn(args.batch, n, args.d, device=device)
    bf16 = args.precision == "bf16"

    def autocast():
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)

    spy = _KernelSpy()
    with spy, autocast():
        blk(x, mask)
    for _ in range(args.warmup):
        run_once(blk, x, mask, grad, autocast)
    sync(device)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
    elif cpu_peak is not None and cpu_peak.ok:
        cpu_peak.start()
    times = []
    for _ in range(args.reps):
        sync(device)
        t0 = time.perf_counter()
        run_once(blk, x, mask, grad, autocast)
        sync(device)
        times.append(time.perf_counter() - t0)
    if device.type == "cuda":
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    else:
        peak = cpu_peak.peak_mib() if cpu_peak is not None and cpu_peak.ok else None
    return {
        "kind": kind,
        "n": n,
        "ms_median": round(1e3 * statistics.median(times), 3),
        "ms_min": round(1e3 * min(times), 3),
        "peak_mib": None if peak is None else round(peak, 2),
        # no fused op seen: SDPA decomposed into bmm + softmax (the math backend)
        "sdpa_kernel": ",".join(sorted(spy.kernels)) or "math",
    }


def _is_oom(err: BaseException) -> bool:
    if isinstance(err, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(err).lower()
    return (
        "out of memory" in text
        or "can't allocate memory" in text
        or "alloc" in text
        and ("fail" in text)
    )


FULL = {
    "ns": "512,1024,2048,4096,8192,16384",
    "d": 768,
    "batch": 8,
    "heads": 12,
    "reps": 5,
    "warmup": 2,
}
QUICK = {"ns": "128,256,512,1024", "d": 64, "batch": 2, "heads": 4, "reps": 3, "warmup": 1}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(
        prog="train_step.py attention", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help="CPU smoke settings (< 60 s)")
    ap.add_argument("--ns", help="sequence lengths, comma separated")
    ap.add_argument("--d", type=int, help="model width (768; quick 64)")
    ap.add_argument("--batch", type=int, help="batch (8; quick 2)")
    ap.add_argument(
        "--heads",
        type=int,
        help="heads (12: head width 64 as in BERT-base; quick 4). The pipeline's "
        "default model.heads is 4",
    )
    ap.add_argument("--k", type=int, default=32, help="Linformer projected length K")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--reps", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument(
        "--precision",
        choices=["fp32", "bf16"],
        help="default: bf16 autocast on CUDA (as training), fp32 on the CPU",
    )
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    device = torch.device(
        "cuda"
        if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
        else "cpu"
    )
    if args.precision is None:
        args.precision = "bf16" if device.type == "cuda" else "fp32"
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # as make_runtime does
    ns = [int(x) for x in args.ns.split(",")]
    kinds = [k for k in args.kinds.split(",") if k]
    cpu_peak = CpuPeak() if device.type == "cpu" else None
    mem_method = (
        "torch.cuda.max_memory_allocated - memory_allocated before the timed runs"
        if device.type == "cuda"
        else CpuPeak.method
        if cpu_peak.ok
        else "unavailable (no /proc/self/clear_refs)"
    )
    info = describe(device)
    print(
        f"# {info['device_name']} | torch {info['torch']} | d {args.d} heads {args.heads} "
        f"batch {args.batch} K {args.k} {args.precision} | fwd+bwd of one AttentionBlock"
    )
    print(f"# peak memory: {mem_method}")
    print(
        f"{'n':>6} {'kind':11} {'kernel':10} {'ms':>9} {'peak MiB':>9}  "
        f"{'time vs linformer':>17} {'mem vs linformer':>16}"
    )
    rows, dead = [], set()
    for n in ns:
        by_kind = {}
        for kind in kinds:
            if kind in dead:
                row = {"kind": kind, "n": n, "oom": True, "skipped": "OOM at a smaller n"}
            else:
                try:
                    row = measure(kind, n, args, device, cpu_peak)
                except (RuntimeError, MemoryError) as err:
                    if not _is_oom(err):
                        raise
                    row = {"kind": kind, "n": n, "oom": True, "error": str(err).splitlines()[0]}
                    dead.add(kind)
                finally:
                    gc.collect()
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
            by_kind[kind] = row
            rows.append(row)
        lin = by_kind.get("linformer")
        for kind, row in by_kind.items():
            if lin and "ms_median" in lin and "ms_median" in row and kind != "linformer":
                row["time_ratio_vs_linformer"] = round(row["ms_median"] / lin["ms_median"], 3)
                if row.get("peak_mib") and lin.get("peak_mib"):
                    row["memory_ratio_vs_linformer"] = round(row["peak_mib"] / lin["peak_mib"], 3)
            _print(row)
    result = {
        **info,
        "settings": {
            k: getattr(args, k)
            for k in ("quick", "d", "batch", "heads", "k", "dropout", "reps", "warmup", "precision")
        },
        "ns": ns,
        "memory_method": mem_method,
        "rows": rows,
        "notes": [
            "mha is the pipeline's MultiHeadSelfAttention, which always passes the "
            "key-padding mask (no flash on CUDA); mha_nomask drops it",
            "sdpa_kernel: the aten SDPA op that ran in the forward",
        ],
    }
    out = Path(args.out)
    write_json(out, result)  # atomic: a killed run leaves the old file
    print(f"# wrote {out}")
    return result


def _print(row: dict) -> None:
    if row.get("oom"):
        print(f"{row['n']:6d} {row['kind']:11} {'OOM':>10}  {row.get('skipped', '')}")
        return
    peak = "n/a" if row["peak_mib"] is None else f"{row['peak_mib']:.1f}"
    t = row.get("time_ratio_vs_linformer")
    m = row.get("memory_ratio_vs_linformer")
    print(
        f"{row['n']:6d} {row['kind']:11} {row['sdpa_kernel']:10} {row['ms_median']:9.2f} "
        f"{peak:>9}  {'' if t is None else f'{t:.2f}x':>17} "
        f"{'' if m is None else f'{m:.2f}x':>16}",
        flush=True,
    )
