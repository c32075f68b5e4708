"""Fine-tuning loop: AdamW with warm-up, bf16 autocast, early stopping on the validation part,
resumable checkpoints, dvclive logging, and optional DistributedDataParallel.

The loop is the same on 1 CPU process, 1 GPU or N processes under ``torchrun``: the global
batch is ``batch_size`` and each of the N ranks takes its 1/N share of every batch.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import record_function
from tqdm.auto import tqdm

from lttw.data.batching import Batchable, epoch_order
from lttw.training.checkpoint import Checkpointer
from lttw.device import Runtime
from lttw.evaluation.metrics import classification_metrics
from lttw.settings import TrainSettings

log = logging.getLogger("lttw.train")


@dataclass
class TrainResult:
    best_epoch: int
    best_val_f1: float
    epochs_run: int
    steps: int
    epoch_times_s: list[float]
    samples_per_s: float


@torch.no_grad()
def predict_proba(model: nn.Module, data: Batchable, rt: Runtime, batch_size: int,
                  progress: bool = False) -> np.ndarray:
    """Class probabilities (n, p) float32 for every row of ``data``, in its row order.

    Rows are batched shortest first, so each batch is trimmed to nearly its rows' own length;
    a row's probabilities do not depend on the rows batched with it.
    """
    model.eval()
    order = torch.argsort(data.lengths, stable=True)
    out = []
    for start in tqdm(range(0, len(data), batch_size), desc="predict", unit="batch",
                      disable=not progress, leave=False):
        inputs, _ = data.batch(order[start:start + batch_size], rt)
        with rt.autocast():
            logits = model(**inputs)
        out.append(torch.softmax(logits.float(), dim=-1).cpu())
    if not out:
        return np.zeros((0, 0), np.float32)
    probs = torch.empty(len(data), out[0].shape[1])
    probs[order] = torch.cat(out)
    return probs.numpy()


def _optimizer(model: nn.Module, cfg: TrainSettings, rt: Runtime) -> torch.optim.Optimizer:
    raw = model.module if hasattr(model, "module") else model
    groups = []
    for name, params in raw.parameter_groups().items():
        params = [p for p in params if p.requires_grad]
        if not params:
            continue
        lr = cfg.lr if name == "encoder" else (cfg.head_lr or cfg.lr)
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        groups += [{"params": decay, "lr": lr, "weight_decay": cfg.weight_decay},
                   {"params": no_decay, "lr": lr, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, fused=rt.device.type == "cuda")


def _schedule(optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:  # linear warm-up, then linear decay to 0
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train_classifier(model: nn.Module, train: Batchable, val: Batchable, cfg: TrainSettings,
                     seed: int, rt: Runtime, checkpoint_dir: str | Path, live=None,
                     fingerprint: str = "", checkpoint_every_s: float | None = None
                     ) -> TrainResult:
    """Train ``model`` in place; on return it holds the best-validation weights.

    Resumes from ``checkpoint_dir`` when it holds a checkpoint of the same ``fingerprint``
    (a hash of everything that defines the run), so a killed run continues where it stopped.
    A mid-epoch checkpoint is written every ``checkpoint_every_s`` seconds (None: the
    ``Checkpointer`` default; 0: after every step), and one at the end of every epoch.
    """
    torch.manual_seed(seed)
    model.to(rt.device)
    ddp_model = rt.wrap(model)
    optimizer = _optimizer(ddp_model, cfg, rt)
    if cfg.compile:  # the step runs compiled; checkpoints and the result use ``model`` itself
        ddp_model = torch.compile(ddp_model)
    steps_per_epoch = max(1, math.ceil(len(train) / cfg.batch_size))
    total = steps_per_epoch * cfg.epochs
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    scheduler = _schedule(optimizer, int(cfg.warmup_ratio * total), total)
    every = {} if checkpoint_every_s is None else {"every_s": checkpoint_every_s}
    ckpt = Checkpointer(checkpoint_dir, fingerprint, enabled=rt.is_main, **every)
    state = ckpt.restore(model, optimizer, scheduler)
    epoch_times = list(state["epoch_times"])
    step, total_seen = state["step"], 0
    bar = tqdm(total=total, initial=step, desc="train", unit="step", disable=not rt.is_main)
    for epoch in range(state["epoch"], cfg.epochs):
        if step >= total:
            break
        # the same order in every process and after a resume: seeded by (seed, epoch)
        order = epoch_order(train, cfg.batch_size, seed + epoch, cfg.group_by_length)
        first = state["step_in_epoch"] if epoch == state["epoch"] else 0
        ddp_model.train()
        t0, seen, running = time.perf_counter(), 0, torch.zeros((), device=rt.device)
        for i in range(first, steps_per_epoch):
            if step >= total:
                break
            rows = order[i * cfg.batch_size:(i + 1) * cfg.batch_size]
            n_global = len(rows)
            rows, share = _rank_rows(rows, rt)
            with record_function("lttw.batch"):
                inputs, labels = train.batch(rows, rt)
            running += _step(ddp_model, model, inputs, labels, share, optimizer, scheduler,
                             cfg, rt)
            step += 1
            seen += n_global
            bar.update(1)
            if step % cfg.log_every == 0:  # the only host sync of the step loop
                mean_loss = (running / cfg.log_every).item()
                running.zero_()
                bar.set_postfix(loss=f"{mean_loss:.4f}")
                if live is not None:
                    live.log_metric("train/loss", mean_loss)
                    live.log_metric("train/lr", scheduler.get_last_lr()[0])
                    live.next_step()
            if ckpt.due():
                ckpt.save(model, optimizer, scheduler, epoch=epoch, step_in_epoch=i + 1,
                          step=step, epoch_times=epoch_times, best=state["best"])
        rt.synchronize()
        epoch_times.append(time.perf_counter() - t0)
        total_seen += seen
        sps = seen / max(epoch_times[-1], 1e-9)
        f1 = _validate(model, val, cfg, rt)
        if live is not None:
            live.log_metric("val/f1_macro", f1)
            live.log_metric("epoch_time_s", epoch_times[-1])
            live.log_metric("samples_per_s", sps)
            live.next_step()
        log.info("epoch %d: val macro-F1 %.4f, %.1f s, %.1f samples/s", epoch, f1,
                 epoch_times[-1], sps)
        best = state["best"]
        if f1 > best["f1"]:
            best = {"f1": f1, "epoch": epoch}
            ckpt.save_best(model)
        state["best"] = best
        ckpt.save(model, optimizer, scheduler, epoch=epoch + 1, step_in_epoch=0, step=step,
                  epoch_times=epoch_times, best=best)
        if cfg.patience and epoch - best["epoch"] >= cfg.patience:
            log.info("early stop: no validation gain for %d epochs", cfg.patience)
            break
    bar.close()
    ckpt.load_best(model)
    ran = len(epoch_times)
    return TrainResult(best_epoch=state["best"]["epoch"], best_val_f1=state["best"]["f1"],
                       epochs_run=ran, steps=step, epoch_times_s=epoch_times,
                       samples_per_s=total_seen / max(sum(epoch_times[-ran:]), 1e-9))


def _step(ddp_model, model, inputs, labels, share, optimizer, scheduler, cfg, rt
          ) -> torch.Tensor:
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
        f1 += classification_metrics(val.labels.numpy(), probs.argmax(1),
                                     probs.shape[1])["f1_macro"]
    rt.broadcast(f1)
    return float(f1.item())
