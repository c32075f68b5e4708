"""Where and how a model runs: device, bf16 autocast, TF32, and (under torchrun) DDP."""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn

from lttw.errors import UserError
from lttw.settings import TrainSettings

log = logging.getLogger(__name__)


def cpu_supports_bf16() -> bool:
    """True when this CPU has native bf16 matrix instructions (AVX512-BF16 or AMX)."""
    try:
        flags = open("/proc/cpuinfo", encoding="utf-8").read()
    except OSError:
        return False
    return any(f in flags for f in ("avx512_bf16", "amx_bf16"))


@dataclass
class Runtime:
    device: torch.device
    bf16: bool
    rank: int = 0
    world_size: int = 1
    ddp: bool = False
    _wrapped: dict = field(default_factory=dict)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def pin(self) -> bool:
        return self.device.type == "cuda"

    def autocast(self):
        if not self.bf16:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def wrap(self, model: nn.Module) -> nn.Module:
        if not self.ddp:
            return model
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def broadcast(self, tensor: torch.Tensor) -> None:
        if self.ddp:
            dist.broadcast(tensor, src=0)

    def barrier(self) -> None:
        if self.ddp:
            dist.barrier()

    def close(self) -> None:
        if self.ddp and dist.is_initialized():
            dist.destroy_process_group()


def make_runtime(cfg: TrainSettings) -> Runtime:
    """Pick the device (``train.device``), precision (``train.bf16``) and process group.

    Under ``torchrun`` (WORLD_SIZE > 1) with ``train.distributed: auto`` this joins the process
    group: NCCL on CUDA, gloo on the CPU.
    """
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UserError(
            "train.device is 'cuda' but no CUDA device is available (use 'auto' or 'cpu')"
        )
    use_cuda = cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available())
    world = int(os.environ.get("WORLD_SIZE", "1"))
    ddp = world > 1 and cfg.distributed == "auto"
    rank = int(os.environ.get("RANK", "0")) if ddp else 0
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", "0")) if ddp else 0
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        bf16 = cfg.bf16 and torch.cuda.is_bf16_supported()
    else:
        device = torch.device("cpu")
        bf16 = cfg.bf16 and cpu_supports_bf16()
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
    if ddp and not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    log.info("device %s, bf16 autocast %s, rank %d of %d", device, bf16, rank, world if ddp else 1)
    return Runtime(device=device, bf16=bf16, rank=rank, world_size=world if ddp else 1, ddp=ddp)
