"""Fusion operators (``lttw.models.fusion``): saved models and seeded runs stay identical.

``Before`` rebuilds the classifier exactly as ``LTTWClassifier.__init__`` / ``fuse`` did
before the fusions became modules (commit 902b1b1): the same parameters, created in the same
order (so a seeded run draws the same initial weights), under the same state-dict names (so a
saved model folder loads), and the same forward. The tests passed on that commit unchanged.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from torch import nn

from lttw.encoder.pretrained import (
    encoder_config_dict,
    encoder_from_config,
    load_pretrained_encoder,
)
from lttw.models import registry
from lttw.models.attention import AttentionBlock
from lttw.models.lttw import LTTWClassifier, LTTWConfig

SLOTS, RANK, MAX_LEN = 4, 3, 16
CASES = [
    ("concat", "linformer"),
    ("concat", "mha"),
    ("concat", "none"),
    ("sequence", "linformer"),
    ("sequence", "mha"),
    ("none", "linformer"),
]


class Before(nn.Module):
    """The LTTW classifier's layout and forward before fusions were modules."""

    def __init__(self, c: LTTWConfig):
        super().__init__()
        self.c = c
        self.encoder = encoder_from_config(c.encoder_config)
        d = self.encoder.config.hidden_size
        width, max_seq = d, c.max_len
        if c.fusion == "concat":
            width = d + c.factor_slots * c.rank
        elif c.fusion == "sequence":
            self.factor_proj = nn.Linear(c.rank, d)
            max_seq = c.max_len + c.factor_slots
        self.blocks = nn.ModuleList(
            AttentionBlock(
                width,
                c.attention,
                c.heads,
                c.ffn_mult,
                c.dropout,
                max_seq,
                c.linformer_k,
                c.share_kv,
                c.norm_first,
            )
            for _ in range(c.depth if c.attention != "none" else 0)
        )
        self.final_norm = nn.LayerNorm(width) if c.norm_first and self.blocks else nn.Identity()
        self.dropout = nn.Dropout(c.dropout)
        self.classifier = nn.Linear(width, c.n_labels)

    def forward(self, ids, mask, factors):
        x = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state  # (B, n, d)
        b, n, _ = x.shape
        if self.c.fusion == "concat":
            x = torch.cat([x, factors.reshape(b, 1, -1).expand(b, n, -1)], dim=-1)
        elif self.c.fusion == "sequence":
            x = torch.cat([x[:, :1], self.factor_proj(factors), x[:, 1:]], dim=1)
            mask = torch.cat([mask[:, :1], mask.new_ones(b, self.c.factor_slots), mask[:, 1:]], 1)
        for block in self.blocks:
            x = block(x, mask)
        return self.classifier(self.dropout(self.final_norm(x[:, 0])))


@pytest.fixture(scope="module")
def encoder_config(tiny_encoder_dir) -> dict:
    return encoder_config_dict(load_pretrained_encoder(tiny_encoder_dir))


@pytest.fixture(scope="module")
def batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 60, (3, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0  # padding
    return ids, mask, torch.rand(3, SLOTS, RANK, generator=g)


def _config(encoder_config, fusion, attention) -> LTTWConfig:
    slots, rank = (0, 0) if fusion == "none" else (SLOTS, RANK)
    return LTTWConfig(
        n_labels=3,
        encoder_config=encoder_config,
        factor_slots=slots,
        rank=rank,
        fusion=fusion,
        attention=attention,
        linformer_k=5,
        depth=2,
        heads=3,
        ffn_mult=2,
        max_len=MAX_LEN,
    )


def _seeded(cls, config):
    torch.manual_seed(0)
    model = cls(config).eval()
    return model, torch.rand(4)  # the random stream after building: same draws used


@pytest.mark.parametrize("fusion,attention", CASES)
def test_seeded_build_and_logits_as_before(fusion, attention, encoder_config, batch):
    config = _config(encoder_config, fusion, attention)
    before, after_before = _seeded(Before, config)
    model, after_model = _seeded(LTTWClassifier, config)
    assert torch.equal(after_model, after_before)
    old, new = before.state_dict(), model.state_dict()
    assert list(new) == list(old)
    assert all(torch.equal(new[k], old[k]) for k in old)
    # the optimiser's order: parameters in the same order, with the same values
    assert [p.shape for p in model.parameters()] == [p.shape for p in before.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), before.parameters()))
    ids, mask, factors = batch
    with torch.no_grad():
        torch.testing.assert_close(
            model(ids, mask, None if fusion == "none" else factors),
            before(ids, mask, factors),
            rtol=0,
            atol=1e-6,
        )


@pytest.mark.parametrize("fusion,attention", [("concat", "linformer"), ("sequence", "mha")])
def test_saved_folder_keeps_its_layout(fusion, attention, encoder_config, batch, tmp_path):
    """A folder saved before (its weights under the old names) loads and gives the same
    logits; saved again, its weights file is the same bytes. A state dict of the old layout
    (a training checkpoint) loads strictly."""
    from safetensors.torch import save_model as save_weights

    from lttw.io import sort_safetensors_metadata

    config = _config(encoder_config, fusion, attention)
    before, _ = _seeded(Before, config)
    old = tmp_path / "old"
    old.mkdir()
    save_weights(before, str(old / registry.WEIGHTS_NAME))
    sort_safetensors_metadata(old / registry.WEIGHTS_NAME)  # as registry.save_model does
    (old / registry.CONFIG_NAME).write_text(
        json.dumps({"variant": "lttw", "config": dataclasses.asdict(config)}), encoding="utf-8"
    )
    model = registry.load_model(old)
    ids, mask, factors = batch
    with torch.no_grad():
        torch.testing.assert_close(
            model(ids, mask, factors), before(ids, mask, factors), rtol=0, atol=1e-6
        )
    registry.save_model(model, tmp_path / "new")
    assert (tmp_path / "new" / registry.WEIGHTS_NAME).read_bytes() == (
        old / registry.WEIGHTS_NAME
    ).read_bytes()
    fresh = LTTWClassifier(config)
    fresh.load_state_dict(before.state_dict())  # strict: no missing or unexpected names
    assert all(torch.equal(a, b) for a, b in zip(fresh.parameters(), before.parameters()))


def test_one_list_of_fusions_and_attention_kinds():
    """lttw.settings names the choices (it validates parameters without torch); the modules
    registered under those names follow it."""
    from lttw.models.attention import ATTENTION_KINDS
    from lttw.models.fusion import FUSION_REGISTRY
    from lttw.settings import ATTENTIONS, FUSIONS

    assert list(FUSION_REGISTRY) == list(FUSIONS)
    assert set(ATTENTION_KINDS) | {"none"} == set(ATTENTIONS)
    assert all(FUSION_REGISTRY[name].name == name for name in FUSIONS)


@pytest.mark.parametrize(
    "fusion,width,extra,labels",
    [
        ("concat", 32 + SLOTS * RANK, 0, ["[CLS]", "a", "b"]),
        (
            "sequence",
            32,
            SLOTS,
            [
                "[CLS]",
                "<factor 0: oil>",
                "<factor 1: empty>",
                "<factor 2: empty>",
                "<factor 3: gas>",
                "a",
                "b",
            ],
        ),
        ("none", 32, 0, ["[CLS]", "a", "b"]),
    ],
)
def test_what_a_fusion_answers(fusion, width, extra, labels, batch):
    from lttw.models.fusion import FUSION_REGISTRY

    module = FUSION_REGISTRY[fusion](32, SLOTS, RANK)
    assert (module.width, module.extra_positions) == (width, extra)
    hidden, (_, mask, factors) = torch.rand(3, 9, 32), batch
    fused, fused_mask = module(hidden, mask, factors)
    assert fused.shape == (3, 9 + extra, width) and fused_mask.shape == (3, 9 + extra)
    assert torch.equal(fused_mask[:, 1 : 1 + extra], torch.ones(3, extra, dtype=mask.dtype))
    assert module.position_labels(["[CLS]", "a", "b"], ["oil", None, None, "gas"]) == labels
    if module.uses_factors:
        with pytest.raises(ValueError, match=rf"fusion '{fusion}' needs factors of shape"):
            module(hidden, mask, factors[:, :1])


@pytest.mark.parametrize(
    "fusion,attention,slots,message",
    [
        ("sequence", "none", SLOTS, "model.fusion: sequence needs an attention block"),
        ("concat", "linformer", 0, "model.fusion: concat needs latent factors"),
        ("bogus", "linformer", SLOTS, "model.fusion must be one of concat, sequence, none"),
    ],
)
def test_fusion_config_errors(fusion, attention, slots, message, encoder_config):
    from lttw.errors import UserError

    config = dataclasses.replace(
        _config(encoder_config, "concat", attention), fusion=fusion, factor_slots=slots
    )
    with pytest.raises(UserError, match=message):
        LTTWClassifier(config)
