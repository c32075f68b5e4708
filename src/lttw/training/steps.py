"""One optimiser step of the training loop (forward, backward, clipping, AdamW, schedule),
this rank's share of a batch, validation, and the compiled step's fall-back to eager."""

from __future__ import annotations

import logging

import torch
from torch import nn
from torch.profiler import record_function

from lttw.data.batching import Batchable
from lttw.device import Runtime
from lttw.evaluation.metrics import validation_f1
from lttw.models.trained import predict_proba
from lttw.settings import TrainSettings
from lttw.training.bf16_weights import Bf16Weights
from lttw.training.losses import classification_loss, loss_weights
from lttw.training.thresholds import validation_calibration

log = logging.getLogger(__name__)


def compiles(cfg: TrainSettings, rt: Runtime) -> bool:
    """Whether the training step runs under ``torch.compile``: ``train.compile`` true, or
    ``auto`` on CUDA (the CPU stays eager: compiling costs more than it saves there)."""
    return cfg.compile is True or (cfg.compile == "auto" and rt.device.type == "cuda")


class CompiledOrEager(nn.Module):
    """``torch.compile(model)``, and ``model`` itself for the rest of the run once compiling
    has failed (no C++ compiler or Triton, an unsupported op, ...): ``train_step`` then redoes the
    step eager, with a warning, instead of failing the run."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.eager = model
        self.compiled = torch.compile(model)
        self.failed = False

    def forward(self, *args, **kwargs):
        return (self.eager if self.failed else self.compiled)(*args, **kwargs)

    def fall_back(self, err: BaseException) -> bool:
        """Switch to eager where ``err`` is a compile failure (True: redo the step); errors
        of the model's own code (a too-long input, ...) are not, and return False."""
        if self.failed or not _compile_failure(err):
            return False
        log.warning("torch.compile failed, training eager: %s", str(err).splitlines()[0])
        self.failed = True
        return True


def _compile_failure(err: BaseException) -> bool:
    """Whether ``err`` comes from torch's compiler stack (dynamo, inductor, Triton, the C++
    toolchain) rather than from the model's own code."""
    from torch._dynamo.exc import TorchDynamoException

    if isinstance(err, TorchDynamoException):
        return True
    module = type(err).__module__ or ""
    return module.startswith(("torch._inductor", "torch._dynamo", "triton"))


def train_step(
    ddp_model, model, inputs, labels, share, optimizer, scheduler, cfg, rt
) -> torch.Tensor:
    """One optimiser step; returns the loss (on the device, no sync). Its phases are labelled
    for ``torch.profiler`` (``bench/train_step.py profile``); the labels cost nothing otherwise.
    A compiled step whose compiling fails is redone eager (``CompiledOrEager``)."""
    try:
        loss = _forward_backward(ddp_model, model, inputs, labels, share, optimizer, rt)
    except Exception as err:
        if not (isinstance(ddp_model, CompiledOrEager) and ddp_model.fall_back(err)):
            raise
        loss = _forward_backward(ddp_model, model, inputs, labels, share, optimizer, rt)
    if cfg.grad_clip:
        with record_function("lttw.clip_grad_norm"):
            # foreach: a few multi-tensor kernels, not a norm and a scale per parameter
            nn.utils.clip_grad_norm_(ddp_model.parameters(), cfg.grad_clip, foreach=True)
    with record_function("lttw.optimizer"):
        optimizer.step()
        scheduler.step()
    return loss.detach()


def _forward_backward(ddp_model, model, inputs, labels, share, optimizer, rt) -> torch.Tensor:
    with record_function("lttw.forward"), rt.autocast():
        loss = classification_loss(ddp_model(**inputs).float(), labels, loss_weights(model))
        aux = model.auxiliary_loss()
        if aux is not None:  # e.g. LEAM's label regulariser (the same on every rank)
            loss = loss + aux.float()
    with record_function("lttw.backward"):
        optimizer.zero_grad(set_to_none=True)
        (loss * share if rt.world_size > 1 else loss).backward()
        if isinstance(ddp_model, Bf16Weights):  # the bf16 copy's gradients, cast at once
            ddp_model.grads_to_fp32()
    return loss


def rank_rows(rows: torch.Tensor, rt: Runtime) -> tuple[torch.Tensor, float]:
    """This rank's rows of a global batch, and the weight of its mean loss.

    DDP averages gradients over the ranks, so with unequal shares (a last, partial batch) the
    plain mean of per-rank means is not the mean over the global batch. Each rank's mean loss
    is weighted by world_size * n_rank / n_global, which makes the averaged gradient that of
    the single-process loss. A rank left without rows (fewer rows than ranks) takes one row
    with weight 0, so that it still joins the gradient all-reduce.
    """
    if rt.world_size == 1:
        return rows, 1.0
    mine = rows.tensor_split(rt.world_size)[rt.rank]
    if len(mine) == 0:
        return rows[:1], 0.0
    return mine, len(mine) * rt.world_size / len(rows)


def validate(model: nn.Module, val: Batchable, cfg: TrainSettings, rt: Runtime) -> float:
    """Macro-F1 on the validation part (computed on the main process, shared with all;
    multi-label: at threshold 0.5)."""
    f1 = torch.zeros((), device=rt.device)
    if rt.is_main and len(val):
        # multi-label: sigmoid probabilities, every class at 0.5 or more
        calibration = validation_calibration(val.labels)
        probs = predict_proba(model, val, rt, cfg.eval_batch_size, calibration=calibration)
        f1 += validation_f1(val.labels.numpy(), probs)
    rt.broadcast(f1)
    return float(f1.item())
