"""Fine-tuning loop: AdamW with warm-up, bf16 autocast, early stopping on the validation part,
resumable checkpoints, dvclive logging, and optional DistributedDataParallel.

The loop is the same on 1 CPU process, 1 GPU or N processes under ``torchrun``: the global
batch is ``batch_size`` and each of the N ranks takes its 1/N share of every batch.

Its steps: ``set_up`` (optimiser, schedule over the planned steps, checkpoint restore:
``lttw.training.session``), ``_run_epoch`` (the optimiser steps of one epoch, each
``lttw.training.steps.train_step``), ``_end_epoch`` (validation, best weights, checkpoint, early
stop). The budget adapts to the data (``plan_epochs``): at least
``train.epochs`` epochs and ``train.min_steps`` optimiser steps, at most ``train.max_epochs``.
Where validation F1 is still rising at the planned end (the last epoch gained at least
``train.min_gain`` over the best before it), training goes on one epoch at a time
(``_extend``), up to ``train.max_epochs``, and the best epoch's weights are kept, as Hugging
Face's early stopping with ``load_best_model_at_end`` does; ``train.keep: last`` keeps the last
epoch's instead, with neither early stop nor extension (a validation part too small to choose
by).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import torch
from torch import nn
from torch.profiler import record_function

from lttw.data.batching import Batchable, epoch_order
from lttw.device import Runtime
from lttw.progress import progress
from lttw.settings import TrainSettings
from lttw.training.live import log_epoch, log_steps
from lttw.training.session import Session, set_up
from lttw.training.steps import rank_rows, train_step, validate

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
    """Train ``model`` in place; on return it holds the best-validation weights (with an
    empty ``val``, e.g. the final model on every labelled row: the last epoch's).

    Resumes from ``checkpoint_dir`` when it holds a checkpoint of the same ``fingerprint``
    (a hash of everything that defines the run), so a killed run continues where it stopped:
    the same trajectory, the running loss, the epoch's time so far and the dvclive step.
    A mid-epoch checkpoint is written every ``checkpoint_every_s`` seconds (None: the
    ``Checkpointer`` default; 0: after every step), and one at the end of every epoch.
    """
    run = set_up(model, train, cfg, seed, rt, checkpoint_dir, fingerprint, checkpoint_every_s, live)
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
    if state["loss_count"]:  # the steps since the last train.log_every (all of a short run's)
        log_steps(
            run.live,
            state["step"],
            {
                "train/loss": state["loss_sum"] / state["loss_count"],
                "train/lr": cast(float, run.scheduler.get_last_lr()[0]),
            },
        )
        state.update(loss_sum=0.0, loss_count=0)
    bar.close()
    run.finish()
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


def _extend(run: Session, bar) -> bool:
    """At the planned end: one epoch more where the last one raised validation F1 by at least
    ``train.min_gain`` over the best before it, up to ``train.max_epochs`` (not past
    ``train.max_steps``). The learning rate of an added epoch decays linearly from
    1/(epochs + 1) of its peak to 0: the last epoch of a schedule planned one epoch longer."""
    cfg, state = run.cfg, run.state
    f1 = [row["val_f1_macro"] for row in state["history"]]
    rising = len(f1) >= 2 and f1[-1] - max(f1[:-1]) >= cfg.min_gain
    if (
        not rising
        or cfg.keep == "last"
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


def _result(run: Session) -> TrainResult:
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


def _run_epoch(run: Session, train: Batchable, epoch: int, bar) -> tuple[float, int]:
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
    start, steps, first = time.perf_counter(), 0, not run.warm_up
    running = torch.full((), state["loss_sum"], device=rt.device)
    for i in range(resumed, run.steps_per_epoch):
        if state["step"] >= run.total:
            break
        rows = order[i * cfg.batch_size : (i + 1) * cfg.batch_size]
        state["epoch_seen"] += len(rows)
        rows, share = rank_rows(rows, rt)
        with record_function("lttw.batch"):
            inputs, labels = train.batch(rows, rt)
        running += train_step(
            run.step_model, run.model, inputs, labels, share, run.optimizer, run.scheduler, cfg, rt
        )
        state["step"] += 1
        state["loss_count"] += 1
        steps += 1
        if first and steps == 1:  # the process's first step: compilation, CUDA context, ...
            rt.synchronize()
            run.warm_up.update(epoch=epoch, first_step_s=time.perf_counter() - start)
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
        if run.save_due():
            state.update(
                epoch=epoch,
                step_in_epoch=i + 1,
                loss_sum=float(running.item()),
                epoch_elapsed_s=time.perf_counter() - t0,
            )
            run.save()
            run.crash_if_due()
    rt.synchronize()
    state["loss_sum"] = float(running.item())
    if first and steps:  # start-up: the first step's time beyond the epoch's typical step's
        first_s = run.warm_up["first_step_s"]
        typical = (time.perf_counter() - start - first_s) / (steps - 1) if steps > 1 else 0.0
        run.warm_up["startup_s"] = max(0.0, first_s - typical)
    return time.perf_counter() - t0, state["epoch_seen"]


def _end_epoch(run: Session, val: Batchable, epoch: int, elapsed: float, seen: int) -> bool:
    """Validate, keep the best weights, checkpoint; True when early stopping ends the run."""
    state, cfg = run.state, run.cfg
    f1 = validate(run.model, val, cfg, run.rt)
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
    if run.warm_up.get("epoch") == epoch and "startup_s" in run.warm_up:
        row["startup_s"] = run.warm_up["startup_s"]  # part of epoch_time_s
    state["history"].append(row)
    log_epoch(run.live, state["history"])
    log.info(
        "epoch %d/%d: %s, %.1f s, %.1f samples/s",
        epoch + 1,
        run.epochs,
        f"val macro-F1 {f1:.4f}" if len(val) else "no validation rows",
        elapsed,
        sps,
    )
    if f1 > state["best"]["f1"] or not len(val) or cfg.keep == "last":
        state["best"] = {"f1": f1, "epoch": epoch}
        if len(val) and cfg.keep == "best":  # a later epoch may be worse: kept on disk
            run.ckpt.save_best(run.model)
        # (no validation rows, or train.keep last: the last epoch's, which the model holds)
    state.update(epoch=epoch + 1, step_in_epoch=0, epoch_elapsed_s=0.0, epoch_seen=0)
    run.save()
    if cfg.patience and epoch - state["best"]["epoch"] >= cfg.patience:
        log.info("early stop: no validation gain for %d epochs", cfg.patience)
        return True
    return False
