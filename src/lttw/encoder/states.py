"""The pretrained encoder's last hidden states of every sample text, computed once for
``train.freeze_encoder`` (the ``encode`` stage): a frozen encoder gives the same states in
every epoch, fold and setting, so a sweep of k, s, K or depth trains only the new layers on
these. They depend on the samples' tokens and the encoder's weights, nothing else.

Stored as float16 (half the disk of float32; MiniLM's states are within float16's range and
its 11-bit mantissa is finer than the bf16 autocast the layers above train in), zero at
padding; ``frozen_states`` checks what a consumer is about to read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lttw.errors import UserError
from lttw.io import read_arrays, read_json
from lttw.progress import progress

if TYPE_CHECKING:  # torch is imported where the states are computed, not to read them
    import torch

#: ``encoded.json`` beside the states: whether they were computed, and their shape
RECORD = "encoded.json"
STATES = "states.safetensors"


def encoder_states(
    encoder: torch.nn.Module,
    input_ids: np.ndarray,
    attention_mask: np.ndarray,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    desc: str = "encode",
) -> np.ndarray:
    """(n, seq) token ids and mask -> (n, seq, d) float16 last hidden states, zero at padding.

    Rows are run in order of length (each batch trimmed to its longest row, so little padding
    is computed) in float32, and written back in their own order. (torch is imported here:
    the encode stage without train.freeze_encoder starts without it.)"""
    import torch

    encoder = encoder.to(device).eval()
    n, seq = input_ids.shape
    d = int(cast(Any, encoder).config.hidden_size)  # a Hugging Face model's config
    out = np.zeros((n, seq, d), dtype=np.float16)
    lengths = attention_mask.astype(bool).sum(1)
    order = np.argsort(-lengths, kind="stable")
    for start in progress(
        range(0, n, batch_size), desc=desc, unit="batch", disable=n <= batch_size
    ):
        rows = order[start : start + batch_size]
        width = max(1, int(lengths[rows].max()))
        ids = torch.from_numpy(input_ids[rows, :width].astype(np.int64)).to(device)
        mask = torch.from_numpy(attention_mask[rows, :width].astype(np.int64)).to(device)
        with torch.inference_mode():
            hidden = encoder(input_ids=ids, attention_mask=mask).last_hidden_state  # (b, w, d)
            hidden = hidden * mask[..., None]
        out[rows, :width] = hidden.float().cpu().numpy().astype(np.float16)
    return out


def frozen_states(folder: str | Path, splits) -> dict[str, np.ndarray]:
    """The cached states of ``splits`` in ``folder`` (the encode stage's output), checked:
    computed (train.freeze_encoder was true when the stage ran) and present for each split.
    Their width is checked against the model where it is built (``freeze_encoder``)."""
    folder = Path(folder)
    record_path = folder / RECORD
    if not record_path.is_file():
        raise UserError(f"{record_path}: not found; run the encode stage (`dvc repro encode`)")
    if not read_json(record_path).get("frozen"):
        raise UserError(
            f"{record_path}: no encoder states were cached (the encode stage ran "
            "with train.freeze_encoder: false); rerun it (`dvc repro encode`)"
        )
    states = read_arrays(folder / STATES)
    missing = [s for s in splits if s not in states]
    if missing:
        raise UserError(f"{folder / STATES}: no states for {', '.join(missing)}")
    return {s: states[s] for s in splits}
