"""Fine-tuning loop: AdamW with warm-up, bf16 autocast, early stopping on the validation part,
resumable checkpoints, dvclive logging, and optional DistributedDataParallel.

The loop is the same on 1 CPU process, 1 GPU or N processes under ``torchrun``: the global
batch is ``batch_size`` and each of the N ranks takes its 1/N share of every batch.

Its steps: ``_set_up`` (optimiser, schedule over the planned steps, checkpoint restore),
``_run_epoch`` (the optimiser steps of one epoch), ``_end_epoch`` (validation, best weights,
checkpoint, early stop). The budget adapts to the data (``plan_epochs``): at least
``train.epochs`` epochs and ``train.min_steps`` optimiser steps, at most ``train.max_epochs``.
Where validation F1 is still rising at the planned end (the last epoch gained at least
``train.min_gain`` over the best before it), training goes on one epoch at a time
(``_extend``), up to ``train.max_epochs``, and the best epoch's weights are kept, as Hugging
Face's early stopping with ``load_best_model_at_end`` does.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import record_function

from lttw.data.batching import Batchable, epoch_order
from lttw.device import Runtime
from lttw.evaluation.metrics import classification_metrics
from lttw.models.trained import predict_proba
from lttw.progress import progress
from lttw.settings import TrainSettings
from lttw.training.checkpoint import Checkpointer
from lttw.training.live import log_epoch, log_steps, trim_history

if TYPE_CHECKING:
    from lttw.models.registry import Classifier

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    best_epoch: int
    best_val_f1: float
    epochs_run: int
    steps: int
    epoch_times_s: list[float]
    samples_per_s: float
    epochs_planned: int = 0
    history: list[dict] = field(default_factory=list)  # one row per epoch (see _end_epoch)

    @property
    def val_f1_still_rising(self) -> bool:
        """Validation F1 improved at the last epoch run (on at least two epochs): more
        epochs would likely have helped."""
        f1 = [row["val_f1_macro"] for row in self.history]
        return len(f1) >= 2 and f1[-1] > max(f1[:-1])

    @property
    def last_gain(self) -> float:
        """Validation F1 of the last epoch over the best before it (0.0 with one epoch)."""
        f1 = [row["val_f1_macro"] for row in self.history]
        return f1[-1] - max(f1[:-1]) if len(f1) >= 2 else 0.0

    @property
    def resumed_epochs(self) -> list[int]:
        return [row["epoch"] for row in self.history if row.get("resumed")]


def plan_epochs(n_train: int, cfg: TrainSettings) -> int:
    """Epochs to plan for ``n_train`` rows: ``train.epochs``, or more where that is fewer than
    ``train.min_steps`` optimiser steps, but at most ``train.max_epochs`` for that reason
    (``train.epochs`` itself is always honoured)."""
    steps_per_epoch = max(1, math.ceil(n_train / cfg.batch_size))
    return max(cfg.epochs, min(math.ceil(cfg.min_steps / steps_per_epoch), cfg.max_epochs))


def _optimizer(model: nn.Module, cfg: TrainSettings, rt: Runtime) -> torch.optim.Optimizer:
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
    return torch.optim.AdamW(groups, fused=rt.device.type == "cuda")


def _schedule(optimizer, warmup: int, total: int | list[int]) -> torch.optim.lr_scheduler.LambdaLR:
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
class _Session:
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

    def save(self) -> None:
        self.ckpt.save(self.model, self.optimizer, self.scheduler, **self.state)


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


def _set_up(
    model,
    train: Batchable,
    cfg: TrainSettings,
    seed: int,
    rt: Runtime,
    checkpoint_dir,
    fingerprint: str,
    checkpoint_every_s,
    live,
) -> _Session:
    torch.manual_seed(seed)
    model.to(rt.device)
    step_model = rt.wrap(model)
    optimizer = _optimizer(step_model, cfg, rt)
    if cfg.compile:  # the step runs compiled; checkpoints and the result use ``model`` itself
        step_model = cast(nn.Module, torch.compile(step_model))  # an OptimizedModule
    steps_per_epoch = max(1, math.ceil(len(train) / cfg.batch_size))
    epochs = plan_epochs(len(train), cfg)
    total = steps_per_epoch * epochs
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    warmup = int(cfg.warmup_ratio * total)  # of the plan: an extension does not move it
    end = [total]
    scheduler = _schedule(optimizer, warmup, end)
    every = {} if checkpoint_every_s is None else {"every_s": checkpoint_every_s}
    ckpt = Checkpointer(checkpoint_dir, fingerprint, enabled=rt.is_main, **every)
    state = {**_fresh_state(), **ckpt.restore(model, optimizer, scheduler)}
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
    return _Session(
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
    )


def train_classifier(
    model: nn.Module,
    train: Batchable,
    val: Batchable,
    cfg: TrainSettings,
    seed: int,
    rt: Runtime,
    checkpoint_dir: str | Path,
    live=None,
    fingerprint: str = "",
    checkpoint_every_s: float | None = None,
) -> TrainResult:
    """Train ``model`` in place; on return it holds the best-validation weights.

    Resumes from ``checkpoint_dir`` when it holds a checkpoint of the same ``fingerprint``
    (a hash of everything that defines the run), so a killed run continues where it stopped:
    the same trajectory, the running loss, the epoch's time so far and the dvclive step.
    A mid-epoch checkpoint is written every ``checkpoint_every_s`` seconds (None: the
    ``Checkpointer`` default; 0: after every step), and one at the end of every epoch.
    """
    run = _set_up(
        model, train, cfg, seed, rt, checkpoint_dir, fingerprint, checkpoint_every_s, live
    )
    state = run.state
    bar = progress(
        total=run.total, initial=state["step"], desc="train", unit="step", disable=not rt.is_main
    )
    epoch = state["epoch"]
    while epoch < run.epochs or _extend(run, bar):
        if state["step"] >= run.total:
            break
        elapsed, seen = _run_epoch(run, train, epoch, bar)
        if _end_epoch(run, val, epoch, elapsed, seen):
            break
        epoch += 1
    bar.close()
    run.ckpt.load_best(model)  # the best epoch's weights, wherever the run stopped
    result = _result(run)
    if result.val_f1_still_rising and result.last_gain >= cfg.min_gain:
        log.warning(
            "validation macro-F1 was still rising at the last epoch run (%d, "
            "train.max_epochs %d): more training would likely help (raise "
            "train.max_epochs)",
            result.epochs_run,
            cfg.max_epochs,
        )
    elif result.val_f1_still_rising:
        log.info(
            "validation macro-F1 rose by %.4f at the last epoch, below train.min_gain "
            "%g: training stopped at its plan",
            result.last_gain,
            cfg.min_gain,
        )
    return result


def _extend(run: _Session, bar) -> bool:
    """At the planned end: one epoch more where the last one raised validation F1 by at least
    ``train.min_gain`` over the best before it, up to ``train.max_epochs`` (not past
    ``train.max_steps``). The learning rate of an added epoch decays linearly from
    1/(epochs + 1) of its peak to 0: the last epoch of a schedule planned one epoch longer."""
    cfg, state = run.cfg, run.state
    f1 = [row["val_f1_macro"] for row in state["history"]]
    rising = len(f1) >= 2 and f1[-1] - max(f1[:-1]) >= cfg.min_gain
    if (
        not rising
        or run.epochs >= cfg.max_epochs
        or state["step"] < run.total
        or (cfg.max_steps and state["step"] >= cfg.max_steps)
    ):
        return False
    run.epochs += 1
    run.total += run.steps_per_epoch
    if cfg.max_steps:
        run.total = min(run.total, cfg.max_steps)
    run.end[0] = run.total
    sched = run.scheduler  # the next step's learning rate, on the raised schedule
    for group, base, factor in zip(run.optimizer.param_groups, sched.base_lrs, sched.lr_lambdas):
        group["lr"] = base * factor(sched.last_epoch)
    state.update(extended_to=run.epochs, extended_total=run.total)
    bar.total = run.total
    bar.refresh()
    log.info(
        "validation macro-F1 still rising (+%.4f >= train.min_gain %g): epoch %d "
        "added (train.max_epochs %d)",
        f1[-1] - max(f1[:-1]),
        cfg.min_gain,
        run.epochs,
        cfg.max_epochs,
    )
    return True


def _result(run: _Session) -> TrainResult:
    state, history = run.state, run.state["history"]
    times = [row["epoch_time_s"] for row in history]
    seen = sum(row["samples"] for row in history)
    return TrainResult(
        best_epoch=state["best"]["epoch"],
        best_val_f1=state["best"]["f1"],
        epochs_run=len(history),
        steps=state["step"],
        epoch_times_s=times,
        samples_per_s=seen / max(sum(times), 1e-9),
        epochs_planned=run.epochs,
        history=list(history),
    )


def _run_epoch(run: _Session, train: Batchable, epoch: int, bar) -> tuple[float, int]:
    """The optimiser steps of one epoch (from the checkpoint's position when resumed);
    returns the epoch's training time and rows, including those before a resume."""
    cfg, rt, state = run.cfg, run.rt, run.state
    # the same order in every process and after a resume: seeded by (seed, epoch)
    order = epoch_order(train, cfg.batch_size, run.seed + epoch, cfg.group_by_length)
    resumed = state["step_in_epoch"] if epoch == state["epoch"] else 0
    if not resumed:
        state["epoch_elapsed_s"], state["epoch_seen"] = 0.0, 0
    run.step_model.train()
    t0 = time.perf_counter() - state["epoch_elapsed_s"]
    running = torch.full((), state["loss_sum"], device=rt.device)
    for i in range(resumed, run.steps_per_epoch):
        if state["step"] >= run.total:
            break
        rows = order[i * cfg.batch_size : (i + 1) * cfg.batch_size]
        state["epoch_seen"] += len(rows)
        rows, share = _rank_rows(rows, rt)
        with record_function("lttw.batch"):
            inputs, labels = train.batch(rows, rt)
        running += _step(
            run.step_model, run.model, inputs, labels, share, run.optimizer, run.scheduler, cfg, rt
        )
        state["step"] += 1
        state["loss_count"] += 1
        bar.update(1)
        if state["step"] % cfg.log_every == 0:  # the only host sync of the step loop
            mean_loss = (running / state["loss_count"]).item()
            running.zero_()
            state["loss_count"] = 0
            bar.set_postfix(loss=f"{mean_loss:.4f}")
            log_steps(
                run.live,
                state["step"],
                # a float: train.lr and head_lr are floats, not tensors
                {"train/loss": mean_loss, "train/lr": cast(float, run.scheduler.get_last_lr()[0])},
            )
        if run.ckpt.due():
            state.update(
                epoch=epoch,
                step_in_epoch=i + 1,
                loss_sum=float(running.item()),
                epoch_elapsed_s=time.perf_counter() - t0,
            )
            run.save()
    rt.synchronize()
    state["loss_sum"] = float(running.item())
    return time.perf_counter() - t0, state["epoch_seen"]


def _end_epoch(run: _Session, val: Batchable, epoch: int, elapsed: float, seen: int) -> bool:
    """Validate, keep the best weights, checkpoint; True when early stopping ends the run."""
    state, cfg = run.state, run.cfg
    f1 = _validate(run.model, val, cfg, run.rt)
    sps = seen / max(elapsed, 1e-9)
    row = {
        "epoch": epoch,
        "val_f1_macro": f1,
        "epoch_time_s": elapsed,
        "samples_per_s": sps,
        "samples": seen,
        "step": state["step"],
    }
    if state.pop("resumed_epoch", None) == epoch:
        row["resumed"] = True  # its time includes the work before the kill, as checkpointed
    state["history"].append(row)
    log_epoch(run.live, state["history"])
    log.info(
        "epoch %d/%d: val macro-F1 %.4f, %.1f s, %.1f samples/s",
        epoch + 1,
        run.epochs,
        f1,
        elapsed,
        sps,
    )
    if f1 > state["best"]["f1"]:
        state["best"] = {"f1": f1, "epoch": epoch}
        run.ckpt.save_best(run.model)
    state.update(epoch=epoch + 1, step_in_epoch=0, epoch_elapsed_s=0.0, epoch_seen=0)
    run.save()
    if cfg.patience and epoch - state["best"]["epoch"] >= cfg.patience:
        log.info("early stop: no validation gain for %d epochs", cfg.patience)
        return True
    return False


def _step(ddp_model, model, inputs, labels, share, optimizer, scheduler, cfg, rt) -> torch.Tensor:
    """One optimiser step; returns the loss (on the device, no sync). Its phases are labelled
    for ``torch.profiler`` (``bench/profile_train.py``); the labels cost nothing otherwise."""
    with record_function("lttw.forward"), rt.autocast():
        loss = F.cross_entropy(ddp_model(**inputs).float(), labels)
        aux = model.auxiliary_loss()
        if aux is not None:  # e.g. LEAM's label regulariser (the same on every rank)
            loss = loss + aux.float()
    with record_function("lttw.backward"):
        optimizer.zero_grad(set_to_none=True)
        (loss * share if rt.world_size > 1 else loss).backward()
    if cfg.grad_clip:
        with record_function("lttw.clip_grad_norm"):
            nn.utils.clip_grad_norm_(ddp_model.parameters(), cfg.grad_clip)
    with record_function("lttw.optimizer"):
        optimizer.step()
        scheduler.step()
    return loss.detach()


def _rank_rows(rows: torch.Tensor, rt: Runtime) -> tuple[torch.Tensor, float]:
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


def _validate(model: nn.Module, val: Batchable, cfg: TrainSettings, rt: Runtime) -> float:
    """Macro-F1 on the validation part (computed on the main process, shared with all)."""
    f1 = torch.zeros((), device=rt.device)
    if rt.is_main and len(val):
        probs = predict_proba(model, val, rt, cfg.eval_batch_size)
        f1 += classification_metrics(val.labels.numpy(), probs.argmax(1), probs.shape[1])[
            "f1_macro"
        ]
    rt.broadcast(f1)
    return float(f1.item())
