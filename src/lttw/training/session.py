"""A training run's set-up and shared state: the epoch plan, the optimiser, the learning-rate
schedule, the checkpoint restore, and ``Session``, which the loop's epochs share."""

from __future__ import annotations

import inspect
import logging
import math
import os
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import torch
from torch import nn

from lttw.data.batching import Batchable
from lttw.device import Runtime
from lttw.settings import TrainSettings
from lttw.training.bf16_weights import Bf16Weights, applies
from lttw.training.checkpoint import Checkpointer
from lttw.training.checkpoint_sync import agreed, rng_states
from lttw.training.live import trim_history
from lttw.training.steps import CompiledOrEager, compiles

if TYPE_CHECKING:
    from lttw.models.registry import Classifier

log = logging.getLogger(__name__)

#: an environment variable: a step after whose checkpoint the training processes end
CRASH_AT_STEP = "LTTW_CRASH_AT_STEP"


def plan_epochs(n_train: int, cfg: TrainSettings) -> int:
    """Epochs to plan for ``n_train`` rows: ``train.epochs``, or more where that is fewer than
    ``train.min_steps`` optimiser steps, but at most ``train.max_epochs`` for that reason
    (``train.epochs`` itself is always honoured)."""
    steps_per_epoch = max(1, math.ceil(n_train / cfg.batch_size))
    return max(cfg.epochs, min(math.ceil(cfg.min_steps / steps_per_epoch), cfg.max_epochs))


def make_optimizer(model: nn.Module, cfg: TrainSettings, rt: Runtime) -> torch.optim.Optimizer:
    raw = cast("Classifier", model.module if hasattr(model, "module") else model)  # DDP-wrapped
    groups = []
    for name, params in raw.parameter_groups().items():
        params = [p for p in params if p.requires_grad]
        if not params:
            continue
        lr = cfg.lr if name == "encoder" else (cfg.head_lr or cfg.lr)
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        groups += [
            {"params": decay, "lr": lr, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "lr": lr, "weight_decay": 0.0},
        ]
    # fused: one kernel per step for all parameters (CUDA; on the CPU one C++ loop) instead
    # of a dozen ops per parameter; the CPU has had fused AdamW since torch 2.4
    return FusedAdamW(groups, fused=True)


class FusedAdamW(torch.optim.AdamW):
    """``torch.optim.AdamW(fused=True)`` whose CPU step advances the step counters with one
    tensor ``1.0`` instead of the Python ``1``.

    torch's fused path adds the Python int to every parameter's CPU step counter, and on the
    CPU ``_foreach_add_`` loops over the counters, wrapping and casting the scalar each time:
    one ``aten::copy_`` per parameter a step (120 of a MiniLM LTTW step's 278, 216 of
    BERT-base's). This does what torch's own foreach path does (its comment on "Update
    steps"): the same counters, the same ``_fused_adamw_`` kernel, the same update. Anything
    else (CUDA, where the add is one kernel; capturable, a closure, a tensor lr or betas,
    mixed devices or dtypes, a torch whose AdamW internals differ) takes AdamW's own step."""

    #: ``Adam._init_group``'s arguments where this step calls it (torch >= 2.6; torch's
    #: AdamW before had its own, with an ``amsgrad`` argument): else AdamW's own step
    _INIT_GROUP = (
        "group",
        "params_with_grad",
        "grads",
        "exp_avgs",
        "exp_avg_sqs",
        "max_exp_avg_sqs",
        "state_steps",
    )

    def _plain_cpu(self) -> bool:
        if tuple(inspect.signature(self._init_group).parameters) != self._INIT_GROUP:
            return False
        if not hasattr(torch, "_fused_adamw_"):
            return False
        for group in self.param_groups:
            if group["capturable"] or group["differentiable"] or not group["fused"]:
                return False
            if torch.is_tensor(group["lr"]) or any(torch.is_tensor(b) for b in group["betas"]):
                return False
            kinds = {(p.device.type, p.dtype) for p in group["params"]}
            if kinds and kinds != {("cpu", torch.float32)}:
                return False
        return True

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None or not self._plain_cpu():
            return super().step(closure)
        one = torch.ones((), dtype=torch.float32)
        for group in self.param_groups:
            params: list = []
            grads: list = []
            exp_avgs: list = []
            exp_avg_sqs: list = []
            max_exp_avg_sqs: list = []
            steps: list = []
            self._init_group(group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps)
            if not params:
                continue
            torch._foreach_add_(steps, one, alpha=1.0)  # no scalar wrapped per counter
            beta1, beta2 = group["betas"]
            torch._fused_adamw_(
                params,
                grads,
                exp_avgs,
                exp_avg_sqs,
                max_exp_avg_sqs,
                steps,
                amsgrad=group["amsgrad"],
                lr=group["lr"],
                beta1=beta1,
                beta2=beta2,
                weight_decay=group["weight_decay"],
                eps=group["eps"],
                maximize=group["maximize"],
                grad_scale=None,
                found_inf=None,
            )
        return None


def lr_schedule(
    optimizer, warmup: int, total: int | list[int]
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up, then linear decay to 0 at ``total`` steps; ``total`` may be a one-item
    list that ``_extend`` raises (the decay then stretches to the new end from the step
    where it is raised)."""
    end = total if isinstance(total, list) else [total]

    def factor(step: int) -> float:  # linear warm-up, then linear decay to 0
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (end[0] - step) / max(1, end[0] - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@dataclass
class Session:
    """Everything the epochs share: the model (and its DDP / compiled wrapper), optimiser,
    schedule, checkpointer, the plan and the loop state (what a checkpoint stores)."""

    model: nn.Module
    step_model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    ckpt: Checkpointer
    state: dict
    cfg: TrainSettings
    rt: Runtime
    seed: int
    steps_per_epoch: int
    epochs: int
    total: int
    live: object = None
    end: list = field(default_factory=list)  # [total]: the schedule's end, raised by _extend
    #: this process's start-up (never checkpointed: a resumed process starts up again): the
    #: epoch of its first step and that step's time beyond a typical step's (``startup_s``)
    warm_up: dict = field(default_factory=dict)
    crash_at: int = 0  # CRASH_AT_STEP's step; 0: none

    def save(self) -> None:
        """A checkpoint (every process calls it: it gathers their random-number states)."""
        rng = rng_states(self.rt)
        self.ckpt.save(self.model, self.optimizer, self.scheduler, rng, **self.state)

    def save_due(self) -> bool:
        """A mid-epoch checkpoint is due after this step: the same answer on every process
        (rank 0's clock, asked every ``train.log_every`` steps, where the loop syncs anyway)."""
        step = self.state["step"]
        if step == self.crash_at or self.ckpt.every_s <= 0:  # every step: no clock to ask
            return True
        if not self.rt.ddp:
            return self.ckpt.due()
        return step % self.cfg.log_every == 0 and agreed(self.ckpt.due(), self.rt)

    def finish(self) -> None:
        """The best epoch's weights, wherever the run stopped: read back from the best
        checkpoint unless the last epoch run was the best, whose weights the model still
        holds (on rank 0, which writes the results). No process's folder keeps a checkpoint
        of the finished run (a later run with the same settings starts afresh)."""
        history = self.state["history"]
        if history and self.state["best"]["epoch"] == history[-1]["epoch"]:
            self.ckpt.mark_complete()
        else:
            self.ckpt.load_best(self.model)
        if self.rt.ddp:
            self.rt.barrier()  # rank 0 has read the best weights before any file goes
            if not self.rt.is_main:
                self.ckpt.discard()

    def crash_if_due(self) -> None:
        """At the step ``CRASH_AT_STEP`` names, after its checkpoint: every process ends as
        a SIGKILL (a node lost, the job pre-empted) would end it (the resume tests)."""
        if self.crash_at and self.state["step"] == self.crash_at:
            self.rt.barrier()  # rank 0's checkpoint is written before any process goes
            log.warning("%s=%d: this process ends here", CRASH_AT_STEP, self.crash_at)
            os.kill(os.getpid(), signal.SIGKILL)


def _fresh_state() -> dict:
    return {
        "epoch": 0,
        "step_in_epoch": 0,
        "step": 0,
        "history": [],
        "best": {"f1": -1.0, "epoch": -1},
        # the running training loss since the last logged value, and the time and rows
        # of the current epoch so far: a resumed run continues all three
        "loss_sum": 0.0,
        "loss_count": 0,
        "epoch_elapsed_s": 0.0,
        "epoch_seen": 0,
    }


def set_up(
    model,
    train: Batchable,
    cfg: TrainSettings,
    seed: int,
    rt: Runtime,
    checkpoint_dir,
    fingerprint: str,
    checkpoint_every_s,
    live,
) -> Session:
    torch.manual_seed(seed)
    model.to(rt.device)
    optimizer = make_optimizer(model, cfg, rt)
    steps_per_epoch = max(1, math.ceil(len(train) / cfg.batch_size))
    epochs = plan_epochs(len(train), cfg)
    total = steps_per_epoch * epochs
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    warmup = int(cfg.warmup_ratio * total)  # of the plan: an extension does not move it
    end = [total]
    scheduler = lr_schedule(optimizer, warmup, end)
    every = {} if checkpoint_every_s is None else {"every_s": checkpoint_every_s}
    ckpt = Checkpointer(checkpoint_dir, fingerprint, enabled=rt.is_main, **every)
    # restored before DDP wraps the model, on every process alike (``checkpoint_sync``)
    state = {**_fresh_state(), **ckpt.restore(model, optimizer, scheduler, rt)}
    step_model = rt.wrap(model)
    if applies(rt, compiles(cfg, rt)):  # bf16 weights cast once a step, not one by one
        step_model = Bf16Weights(step_model)
    if compiles(cfg, rt):  # the step runs compiled; checkpoints and the result use ``model``
        step_model = CompiledOrEager(step_model)
    if state.get("extended_to"):  # a resumed run that had gone past its plan
        epochs = state["extended_to"]
        end[0] = total = state["extended_total"]
    if state["step_in_epoch"]:  # this epoch's own time and rows continue from the checkpoint
        state["resumed_epoch"] = state["epoch"]
    log.info(
        "training plan: %d epochs of %d steps (%d steps; train.epochs %d, min_steps %d, "
        "max_epochs %d)",
        epochs,
        steps_per_epoch,
        total,
        cfg.epochs,
        cfg.min_steps,
        cfg.max_epochs,
    )
    if live is not None:
        trim_history(live, state["step"], state["history"])  # nothing after the checkpoint
    return Session(
        model,
        step_model,
        optimizer,
        scheduler,
        ckpt,
        state,
        cfg,
        rt,
        seed,
        steps_per_epoch,
        epochs,
        total,
        live,
        end,
        crash_at=int(os.environ.get(CRASH_AT_STEP) or 0),
    )
