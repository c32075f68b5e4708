"""One checkpoint for every process of a distributed run (``torchrun``, one or many nodes).

Only rank 0 writes checkpoints, to its own ``train`` checkpoint folder: with a folder per node
(no shared storage, or ranks placed on other nodes after a restart), the other processes
find no checkpoint, or an older one. Before the model is wrapped in DistributedDataParallel,
every process reports the loop step of the checkpoint it can read (of this run's
fingerprint); the process with the furthest one reads it and sends its tensors and state to
all the others, so that every rank continues from the same model, optimiser, schedule, loop
position and random-number state, whatever storage each node has; rank 0 receives the best
epoch's weights too, which it reads back at the end.

Each process draws its own dropout masks (its rows' shapes differ), so a checkpoint holds
every rank's random-number state (``rng_states``, gathered where every process saves) and
each rank continues its own. The processes save at the same steps: rank 0's clock says when
a mid-epoch checkpoint is due, and the others learn it (``agreed``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import torch
import torch.distributed as dist

from lttw.device import Runtime

log = logging.getLogger(__name__)


def source_rank(step: int, rt: Runtime) -> int | None:
    """The rank whose checkpoint every process resumes from: the furthest step (the lowest
    rank among equals); None when no process has one (``step`` -1: this one has none)."""
    steps: list[Any] = [None] * rt.world_size
    dist.all_gather_object(steps, step)
    best = max(range(rt.world_size), key=lambda rank: (int(steps[rank]), -rank))
    return None if int(steps[best]) < 0 else best


def share(loaded: tuple[Any, dict] | None, src: int, rt: Runtime) -> tuple[dict, dict]:
    """Rank ``src``'s checkpoint (``loaded``: its state and tensors, on that rank) on every
    rank: the state as JSON, each tensor by a broadcast of its own (on the run's device)."""
    header: list[object] = [None]
    if rt.rank == src:
        assert loaded is not None
        meta, tensors = loaded
        header[0] = json.dumps(
            {
                "meta": meta,
                "tensors": {k: [list(v.shape), str(v.dtype)] for k, v in tensors.items()},
            }
        )
    dist.broadcast_object_list(header, src=src)
    head = json.loads(str(header[0]))
    device = _collective_device(rt)
    shared: dict[str, torch.Tensor] = {}
    for name, (shape, dtype) in head["tensors"].items():
        if rt.rank == src:
            tensor = loaded[1][name].to(device).contiguous()  # type: ignore[index]
        else:
            tensor = torch.empty(
                shape, dtype=getattr(torch, dtype.removeprefix("torch.")), device=device
            )
        dist.broadcast(tensor, src=src)
        shared[name] = tensor.cpu()
    if rt.rank != src:
        log.info("checkpoint received from rank %d", src)
    return head["meta"], shared


def rng_states(rt: Runtime) -> list[torch.Tensor]:
    """Every process's torch random-number state, in rank order (on every process)."""
    own = torch.get_rng_state()
    if not rt.ddp:
        return [own]
    states: list[Any] = [None] * rt.world_size
    dist.all_gather_object(states, own.numpy().tobytes())
    return [torch.frombuffer(bytearray(state), dtype=torch.uint8) for state in states]


def agreed(flag: bool, rt: Runtime) -> bool:
    """Rank 0's ``flag``, on every process."""
    if not rt.ddp:
        return flag
    tensor = torch.tensor([int(flag)], device=_collective_device(rt))
    rt.broadcast(tensor)
    return bool(tensor.item())


def _collective_device(rt: Runtime) -> torch.device:
    """Where the collectives' tensors live: the GPU under NCCL, else the CPU (gloo)."""
    return rt.device if rt.device.type == "cuda" else torch.device("cpu")
