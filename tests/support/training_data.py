"""Tiny training inputs, a tiny model and a weight comparison shared by the training tests."""

from __future__ import annotations

import torch
from torch import nn

from lttw import models  # noqa: F401  (registers the variants)
from lttw.data.batching import Batchable
from lttw.device import Runtime
from lttw.models.registry import MODEL_REGISTRY
from lttw.settings import ModelSettings, TrainSettings

SEQ, SLOTS, RANK, N_LABELS = 16, 4, 3, 3


def make_data(n: int, seed: int, vocab_size: int = 150) -> Batchable:
    """Learnable synthetic batches: token 1 and the factor rows carry the label; padding."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, N_LABELS, (n,), generator=g)
    ids = torch.randint(60, vocab_size, (n, SEQ), generator=g)
    ids[:, 0] = 2  # [CLS]
    ids[:, 1] = 100 + labels
    lengths = torch.randint(SEQ // 2, SEQ + 1, (n,), generator=g)
    mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).to(torch.int8)
    ids = (ids * mask).to(torch.int32)  # [PAD] = 0
    factors = torch.rand(n, SLOTS, RANK, generator=g) * 0.1
    factors[torch.arange(n), 0, labels] += 1.0
    return Batchable(ids, mask, factors, labels)


def build_model(encoder_dir, seed: int = 0) -> nn.Module:
    """A tiny LTTW (Linformer, concat fusion) with every dropout at 0: deterministic."""
    settings = ModelSettings(
        encoder=str(encoder_dir), max_len=SEQ, k=2, s=2, heads=2, linformer_k=4, dropout=0.0
    )
    torch.manual_seed(seed)
    model = MODEL_REGISTRY["lttw"].from_settings(
        settings, N_LABELS, (SLOTS, RANK), str(encoder_dir)
    )
    for m in model.modules():  # the encoder's own dropouts (its config says 0.1)
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return model


CPU = Runtime(device=torch.device("cpu"), bf16=False)


TRAIN, VAL = make_data(45, seed=1), make_data(24, seed=2)  # 45 rows: a partial last batch


def assert_same_weights(a: nn.Module, b: nn.Module, atol: float = 0.0) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    worst = max((sa[k].float() - sb[k].float()).abs().max().item() for k in sa)
    assert worst <= atol, f"max abs weight difference {worst:.3g} > {atol}"


def train_settings(**kw) -> TrainSettings:
    base = dict(
        device="cpu",
        bf16=False,
        epochs=2,
        min_steps=0,
        batch_size=8,
        eval_batch_size=16,
        lr=1e-3,
        head_lr=3e-3,
        warmup_ratio=0.1,
        patience=0,
        log_every=1,
        distributed="off",
        min_gain=1.0,
    )  # min_gain 1: never past the plan
    return TrainSettings(**{**base, **kw})
