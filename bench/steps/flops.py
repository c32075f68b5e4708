"""FLOPs of one training sample, measured (``train_step.py throughput``)."""

from __future__ import annotations

import statistics

import torch

from lttw.data.batching import Batchable


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
