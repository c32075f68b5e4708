"""The profile's accounting (``train_step.py profile``): which step phase an event of
``torch.profiler`` ran in, each unit of time counted once, op counts per step and phase, and
op categories."""

from __future__ import annotations

from collections import defaultdict

from torch.autograd import DeviceType

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
    ``training.steps.train_step``; a range is in its own phase), or ``backward`` for ops the autograd
    engine ran (on CUDA they run in the engine's own thread, outside the loop's ranges)."""
    node = event
    while node is not None:
        if node.name.startswith("autograd::engine"):
            return "backward"
        if node.name.startswith("lttw."):
            return node.name[len("lttw.") :]
        node = node.cpu_parent
    return OTHER


def is_device(event) -> bool:
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
        ops = {e.id: e for e in tree if not is_device(e)}
        for e in tree:
            if not is_device(e) or e.is_user_annotation or e.name.startswith("lttw."):
                continue
            launcher = ops.get(e.linked_correlation_id)
            t = e.time_range.elapsed_us()
            by_phase[phase_of(launcher) if launcher is not None else OTHER] += t
            if launcher is not None:
                by_event[launcher.id] += t
        return by_phase, by_event
    for e in tree:
        if is_device(e) or e.is_async:
            continue
        by_phase[phase_of(e)] += e.self_cpu_time_total
        by_event[e.id] += e.self_cpu_time_total
    return by_phase, by_event


def op_counts(tree: list, steps: int) -> dict:
    """Calls per step of the ``COUNTED`` ops and of all ``aten::`` ops, in total and by phase."""
    total: dict[str, int] = defaultdict(int)
    by_phase: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for e in tree:
        if is_device(e) or not e.name.startswith("aten::"):
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


def rounded(d: dict) -> dict:
    return {k: round(v, 2) for k, v in sorted(d.items(), key=lambda kv: -kv[1])}


def category(name: str) -> str:
    low = name.lower()
    for label, fragments in CATEGORIES:
        if any(f in low for f in fragments):
            return label
    return "other"
