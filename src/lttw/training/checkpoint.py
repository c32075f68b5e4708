"""Resumable training checkpoints in safe formats (safetensors + JSON, no pickle).

A checkpoint holds the model's tensors (but the frozen parameters, which the model is built
with: a frozen encoder's), the optimiser's, the scheduler and loop position, and the torch RNG
state, so a run killed mid-epoch and restarted continues the same trajectory. It is
tagged with a fingerprint of the run's settings and inputs; a checkpoint of another run is
ignored, never resumed by mistake.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from lttw.device import Runtime
from lttw.io import atomic_path, write_json
from lttw.training.checkpoint_sync import share, source_rank

log = logging.getLogger(__name__)

STATE_JSON = "state.json"
TENSORS = "last.safetensors"
BEST = "best.safetensors"


def _frozen(model: nn.Module) -> set[str]:
    """The names of the parameters training leaves as they are (``requires_grad`` off: a
    frozen encoder's): the model is built with them, so no checkpoint holds them."""
    return {name for name, p in model.named_parameters() if not p.requires_grad}


def _model_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    # clone: safetensors refuses tensors that share storage (tied weights)
    frozen = _frozen(model)
    return {
        f"model.{k}": v.detach().cpu().clone().contiguous()
        for k, v in model.state_dict().items()
        if k not in frozen
    }


def _load_model_tensors(model: nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    """Put a checkpoint's model tensors (``model.``-prefixed) back: every one but the frozen
    parameters, which the model holds from its build."""
    missing, unexpected = model.load_state_dict(
        {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=False
    )
    absent = set(missing) - _frozen(model)
    if absent or unexpected:
        raise RuntimeError(
            f"checkpoint does not fit the model: missing {sorted(absent)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]}"
        )


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for idx, st in sd["state"].items():
        for name, value in st.items():
            if torch.is_tensor(value):
                tensors[f"optim.{idx}.{name}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{idx}.{name}"] = value
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _restore_optimizer(optimizer, tensors: dict, meta: dict) -> None:
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, idx, name = key.split(".", 2)
            state.setdefault(int(idx), {})[name] = value
    for key, value in meta["scalars"].items():
        idx, name = key.split(".", 1)
        state.setdefault(int(idx), {})[name] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def can_resume(folder: str | Path, fingerprint: str) -> bool:
    """``folder`` holds a resumable checkpoint of the run ``fingerprint``."""
    meta = read_checkpoint_state(folder)
    return meta is not None and meta.get("fingerprint") == fingerprint


def read_checkpoint_state(folder: str | Path) -> dict | None:
    """The state stored with the last checkpoint in ``folder`` (fingerprint, loop position,
    optimiser and scheduler state), or None when there is none."""
    path = Path(folder) / TENSORS
    if not path.is_file():
        return None
    with safe_open(str(path), framework="pt") as f:
        return json.loads((f.metadata() or {}).get("state", "{}"))


class Checkpointer:
    def __init__(
        self, folder: str | Path, fingerprint: str, every_s: float = 120.0, enabled: bool = True
    ):
        self.folder = Path(folder)
        self.fingerprint = fingerprint
        self.every_s = every_s
        self.enabled = enabled
        self._last = time.monotonic()

    def due(self) -> bool:
        return self.enabled and time.monotonic() - self._last >= self.every_s

    def restore(self, model: nn.Module, optimizer, scheduler, rt: Runtime | None = None) -> dict:
        """Load the last checkpoint of this run if there is one; return the loop state it
        was saved with (the keyword arguments of ``save``; {} when there is none). Under
        DDP (``rt``) every process loads the same one: the furthest that any process can
        read, sent by that process to the others (``checkpoint_sync``)."""
        meta = self._own_state()
        if rt is not None and rt.ddp:
            src = source_rank(meta["loop"]["step"] if meta else -1, rt)
            if src is None:
                return {}
            mine = (meta, self._with_best()) if rt.rank == src else None
            meta, tensors = share(mine, src, rt)
            best = {k[5:]: v for k, v in tensors.items() if k.startswith("best.")}
            if best and self.enabled and rt.rank != src:  # rank 0 keeps the best weights
                with atomic_path(self.folder / BEST) as tmp:
                    save_file(best, str(tmp))
        elif meta is None:
            return {}
        else:
            tensors = load_file(str(self.folder / TENSORS))
        _load_model_tensors(model, tensors)
        _restore_optimizer(optimizer, tensors, meta["optimizer"])
        scheduler.load_state_dict(meta["scheduler"])
        rank = rt.rank if rt is not None else 0  # this rank's own state where it was saved
        torch.set_rng_state(tensors.get(f"rng.cpu.{rank}", tensors["rng.cpu"]))
        log.info(
            "resuming from checkpoint: epoch %d, step %d",
            meta["loop"]["epoch"],
            meta["loop"]["step"],
        )
        return meta["loop"]

    def _with_best(self) -> dict[str, torch.Tensor]:
        """The checkpoint's tensors and, as ``best.*``, the best weights where kept."""
        tensors = load_file(str(self.folder / TENSORS))
        if (self.folder / BEST).is_file():
            tensors.update({f"best.{k}": v for k, v in load_file(str(self.folder / BEST)).items()})
        return tensors

    def _own_state(self) -> dict | None:
        """The state of this folder's checkpoint where it is of this run, else None."""
        meta = read_checkpoint_state(self.folder)
        if meta is None:
            return None
        if meta.get("fingerprint") != self.fingerprint:
            log.info("ignoring checkpoint of another run in %s", self.folder)
            return None
        return meta

    def save(self, model, optimizer, scheduler, rng: list | None = None, **loop) -> None:
        """One file, written atomically: tensors plus the loop state in its metadata, so a
        kill at any moment leaves either the previous checkpoint or this one, never a mix.
        ``rng``: every rank's random-number state (rank order; None: this process's)."""
        if not self.enabled:
            return
        opt_tensors, opt_meta = _optimizer_tensors(optimizer)
        rng = rng or [torch.get_rng_state()]
        ranks = {f"rng.cpu.{rank}": state for rank, state in enumerate(rng) if rank}
        tensors = {**_model_tensors(model), **opt_tensors, "rng.cpu": rng[0], **ranks}
        # LambdaLR keeps None for plain functions: its state is JSON-safe
        state = {
            "fingerprint": self.fingerprint,
            "loop": loop,
            "optimizer": opt_meta,
            "scheduler": scheduler.state_dict(),
        }
        with atomic_path(self.folder / TENSORS) as tmp:
            save_file(tensors, str(tmp), metadata={"state": json.dumps(state)})
        self._last = time.monotonic()

    def save_best(self, model: nn.Module) -> None:
        if self.enabled:
            with atomic_path(self.folder / BEST) as tmp:
                save_file(_model_tensors(model), str(tmp))

    def load_best(self, model: nn.Module) -> None:
        """Put the best-validation weights back into ``model``; the run is complete, so its
        checkpoint is removed (a later run with the same settings starts afresh)."""
        path = self.folder / BEST
        if self.enabled and path.is_file():
            _load_model_tensors(model, load_file(str(path)))
        self.mark_complete()

    def discard(self) -> None:
        """Remove this run's checkpoint from the folder (a process that does not write
        checkpoints: one an earlier start of the run left there as rank 0)."""
        if self._own_state() is not None:
            (self.folder / TENSORS).unlink(missing_ok=True)
            (self.folder / BEST).unlink(missing_ok=True)

    def mark_complete(self) -> None:
        """Record that the run of this fingerprint finished: its resumable checkpoint and
        best weights are removed (a later run with the same settings starts afresh)."""
        if self.enabled:
            write_json(
                self.folder / STATE_JSON, {"fingerprint": self.fingerprint, "complete": True}
            )
            (self.folder / TENSORS).unlink(missing_ok=True)
            (self.folder / BEST).unlink(missing_ok=True)
