"""bf16 copies of a model's fp32 weights for its training forward, cast once per step.

Under bf16 autocast every fp32 weight and bias is cast to bf16 in every forward (one
``aten::copy_`` each, plus the cast's backward, which casts the bf16 gradient back): about
400 of the 900 copies of a BERT-base-size LTTW step, and on a CPU the fp32 LayerNorm
outputs are cast again for each of Q, K and V. ``Bf16Weights`` wraps the model instead:
each step it casts all trainable fp32 parameters to bf16 at once (one ``torch.cat`` and one
cast), runs the model's forward on those bf16 tensors (``torch.func.functional_call``, still
under autocast, which now casts only what is fp32: inputs, fp32-only ops) and, after the
backward, casts their bf16 gradients back at once into the fp32 parameters' ``.grad`` (one
``torch.cat`` and one cast). The fp32 parameters stay the model's own, the optimiser's
master weights: AdamW, clipping, checkpoints, the best weights and the saved folder see
fp32 tensors.

What changes is the forward's precision where autocast kept fp32 and the op follows its
inputs: on the CPU (whose autocast runs LayerNorm in the input's dtype) the embeddings,
LayerNorm outputs and residual stream are bf16 (LayerNorm computes in fp32 with its fp32
weights); on CUDA LayerNorm and softmax stay fp32 by autocast's own list. The step uses it
only where it runs eager on one process (``applies``): DDP reduces the parameters' own
gradients, and a compiled step fuses the casts anyway.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call

#: modules whose parameters stay fp32: the CPU's LayerNorm takes a bf16 input with fp32
#: parameters but not an fp32 input (e.g. a sum with an fp32 positional table) with bf16
#: ones, and CUDA's autocast computes normalisation in fp32 anyway
_NORMS = (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._BatchNorm)


class Bf16Weights(nn.Module):
    """``model`` whose forward computes with a bf16 copy of its trainable fp32 parameters
    (but those of normalisation layers), made once per call; ``grads_to_fp32`` moves that
    copy's gradients to the fp32 parameters after the backward. The flat buffers are kept from step to step (about 3x
    the fp32 parameters' size): allocating them anew costs more than the copies."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        kept = {  # normalisation layers keep fp32 parameters (see ``_NORMS``)
            id(p) for m in model.modules() if isinstance(m, _NORMS) for p in m.parameters()
        }
        self._names = [
            n
            for n, p in model.named_parameters()
            if p.requires_grad and p.dtype == torch.float32 and id(p) not in kept
        ]
        self._leaves: list[torch.Tensor] = []
        self._flat: dict[str, torch.Tensor] = {}

    def _params(self) -> list[nn.Parameter]:
        named = dict(self.model.named_parameters())
        return [named[n] for n in self._names]

    def _buffer(self, name: str, like: torch.Tensor, dtype: torch.dtype, n: int) -> torch.Tensor:
        buf = self._flat.get(name)
        if buf is None or buf.device != like.device or buf.numel() < n:
            buf = self._flat[name] = torch.empty(n, dtype=dtype, device=like.device)
        return buf[:n]

    def forward(self, *args, **kwargs):
        params = self._params()
        if not params:
            return self.model(*args, **kwargs)
        sizes = [p.numel() for p in params]
        with torch.no_grad():  # one cat, one cast: not one cast per weight
            n = sum(sizes)
            fp32 = torch.cat(
                [p.reshape(-1) for p in params],
                out=self._buffer("fp32", params[0], torch.float32, n),
            )
            flat = self._buffer("bf16", params[0], torch.bfloat16, n).copy_(fp32)
        self._leaves = [
            part.view(p.shape).detach().requires_grad_()
            for part, p in zip(flat.split(sizes), params, strict=True)
        ]
        return functional_call(
            self.model, dict(zip(self._names, self._leaves, strict=True)), args, kwargs
        )

    @torch.no_grad()
    def grads_to_fp32(self) -> None:
        """Set each fp32 parameter's ``.grad`` to its bf16 copy's gradient, cast at once
        (one cat, one cast; a parameter the forward did not reach keeps ``None``)."""
        pairs = [
            (p, leaf.grad)
            for p, leaf in zip(self._params(), self._leaves, strict=True)
            if leaf.grad is not None
        ]
        self._leaves = []
        if not pairs:
            return
        sizes = [g.numel() for _, g in pairs]
        n = sum(sizes)
        grads = torch.cat(
            [g.reshape(-1) for _, g in pairs],
            out=self._buffer("grad_bf16", pairs[0][1], torch.bfloat16, n),
        )
        flat = self._buffer("grad_fp32", grads, torch.float32, n).copy_(grads)
        for (p, _), part in zip(pairs, flat.split(sizes), strict=True):
            grad = part.view(p.shape)
            p.grad = grad if p.grad is None else p.grad + grad


def applies(rt, compiled: bool) -> bool:
    """Whether the training step runs on ``Bf16Weights``: bf16 on, one process, eager."""
    return bool(rt.bf16) and not rt.ddp and not compiled
