"""The comparator variants: every neural baseline on the tiny random encoder, and tfidf_linear."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import lttw.models  # noqa: F401  (registers every variant)
from lttw.encoder.pretrained import load_pretrained_encoder
from lttw.encoder.tokenizer import load_tokenizer
from lttw.models import registry
from lttw.models.tfidf import TfidfLinear, fit_tfidf_linear
from lttw.settings import ModelSettings

NEURAL = ["encoder", "encoder_cnn", "transformer", "bilstm_attention", "leam"]
N_LABELS = 3
TEXTS = [
    "the cat sat on the mat",
    "a dog",
    "great movie , good film and a great team",
    "bad news",
    "the team ran fast",
]
LABELS = torch.tensor([0, 1, 2, 1, 0])


def _settings(variant: str, **over) -> ModelSettings:
    base = dict(
        variant=variant,
        hidden=16,
        layers=1,
        heads=2,
        cnn_widths=[2, 3],
        cnn_channels=8,
        leam_r=1,
        dropout=0.1,
        max_len=16,
    )
    return ModelSettings(**(base | over))


def _build(variant, encoder_dir, **over):
    torch.manual_seed(0)
    return registry.MODEL_REGISTRY[variant].from_settings(
        _settings(variant, **over), N_LABELS, None, encoder_dir
    )


@pytest.fixture(scope="module")
def batch(tiny_encoder_dir):
    tok = load_tokenizer(tiny_encoder_dir)
    enc = tok(TEXTS, padding=True, truncation=True, max_length=16, return_tensors="pt")
    assert (enc["attention_mask"] == 0).any(), "the batch must contain padding"
    return enc["input_ids"], enc["attention_mask"]


@pytest.mark.parametrize("variant", NEURAL)
def test_shape_and_registry(variant, tiny_encoder_dir, batch):
    model = _build(variant, tiny_encoder_dir).eval()
    assert model.variant == variant
    logits = model(*batch)
    assert logits.shape == (len(TEXTS), N_LABELS) and torch.isfinite(logits).all()
    groups = model.parameter_groups()
    assert bool(groups["encoder"]) == variant.startswith("encoder")
    assert groups["head"]


@pytest.mark.parametrize("variant", NEURAL)
def test_training_step_reduces_loss(variant, tiny_encoder_dir, batch):
    model = _build(variant, tiny_encoder_dir).eval()  # dropout off: a deterministic objective
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(3):
        loss = torch.nn.functional.cross_entropy(model(*batch), LABELS)
        opt.zero_grad()
        loss.backward()
        if step == 0:  # every top-level part of the model is reached by a finite gradient
            for name, child in model.named_children():
                grads = [p.grad for p in child.parameters() if p.requires_grad]
                if grads:
                    assert all(g is not None and torch.isfinite(g).all() for g in grads), name
                    assert any(g.abs().sum() > 0 for g in grads), name
        opt.step()
        losses.append(loss.item())
    final = torch.nn.functional.cross_entropy(model(*batch), LABELS).item()
    assert final < losses[0]


@pytest.mark.parametrize("variant", NEURAL)
def test_save_load_identical_logits(variant, tiny_encoder_dir, batch, tmp_path):
    model = _build(variant, tiny_encoder_dir).eval()
    registry.save_model(model, tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["variant"] == variant
    loaded = registry.load_model(tmp_path)
    assert type(loaded) is type(model)
    as_json = lambda m: json.dumps(registry.config_to_dict(m.config), sort_keys=True)  # noqa: E731
    assert as_json(loaded) == as_json(model)
    with torch.no_grad():
        assert torch.equal(model(*batch), loaded(*batch))  # same weights, same batch: exact


@pytest.mark.parametrize(
    "variant,pooling",
    [(v, "cls") for v in NEURAL] + [("transformer", "mean"), ("encoder", "mean")],
)
def test_padding_is_masked(variant, pooling, tiny_encoder_dir, batch):
    """A padded sample's logits equal those of the same sample alone, unpadded."""
    model = _build(variant, tiny_encoder_dir, pooling=pooling).eval()
    ids, mask = batch
    with torch.no_grad():
        padded = model(ids, mask)
        for i in range(len(TEXTS)):
            n = int(mask[i].sum())
            alone = model(ids[i : i + 1, :n], mask[i : i + 1, :n])
            torch.testing.assert_close(padded[i : i + 1], alone, atol=1e-5, rtol=1e-4)


def test_encoder_mean_pooling_is_the_mean_of_the_real_token_states(tiny_encoder_dir, batch):
    """model.pooling mean on the encoder variant: the head reads the masked mean of the
    encoder's states (a sentence-transformers encoder's own text vector), saved and loaded."""
    from lttw.models._layers import masked_mean

    model = _build("encoder", tiny_encoder_dir, pooling="mean").eval()
    assert model.config.pooling == "mean"
    ids, mask = batch
    with torch.no_grad():
        states = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        want = model.head(masked_mean(states, mask))
        torch.testing.assert_close(model(ids, mask), want)
        assert not torch.allclose(model(ids, mask), model.head(states[:, 0]))


@pytest.mark.parametrize("variant", ["bilstm_attention", "leam"])
def test_word_embedding_init(variant, tiny_encoder_dir):
    pretrained = load_pretrained_encoder(tiny_encoder_dir).get_input_embeddings().weight
    copied = _build(variant, tiny_encoder_dir, pretrained_embeddings=True).embed.weight
    random = _build(variant, tiny_encoder_dir, pretrained_embeddings=False).embed.weight
    assert copied.shape == random.shape and copied.shape[1] == pretrained.shape[1]
    assert torch.equal(copied[: len(pretrained)], pretrained)
    assert not torch.equal(random[: len(pretrained)], pretrained)


def test_leam_label_regularizer(tiny_encoder_dir):
    model = _build("leam", tiny_encoder_dir)
    reg = model.label_regularizer()
    reg.backward()
    assert reg.ndim == 0 and torch.isfinite(reg)
    assert model.label_embed.grad.abs().sum() > 0


def test_bad_settings_are_user_errors(tiny_encoder_dir):
    from lttw.errors import UserError

    with pytest.raises(UserError, match="model.heads"):
        _build("transformer", tiny_encoder_dir, hidden=15, heads=2)
    with pytest.raises(UserError, match="model.cnn_widths"):
        _build("encoder_cnn", tiny_encoder_dir, cnn_widths=[])


# --------------------------------------------------------------------------- tfidf_linear

CORPUS = [
    "great film, great cast",
    "a wonderful movie",
    "what a great movie",
    "awful film",
    "terrible plot, awful acting",
    "boring and awful",
    "the match ended in a draw",
    "the team won the match",
    "a late goal won the game",
]
CORPUS_Y = [0, 0, 0, 1, 1, 1, 3, 3, 3]  # label 2 never occurs in training


@pytest.mark.parametrize("linear_model", ["logistic", "svm"])
def test_tfidf_fit_predict_roundtrip(linear_model, tmp_path):
    model = fit_tfidf_linear(CORPUS, CORPUS_Y, 4, linear_model, random_state=0)
    queries = ["a great movie", "awful acting", "the team won", "unseen words only", ""]
    proba = model.predict_proba(queries)
    assert proba.shape == (len(queries), 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (proba[:, 2] == 0).all()
    assert model.predict(queries[:3]).tolist() == [0, 1, 3]

    model.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "config.json",
        "model.safetensors",
        "vocabulary.json",
    ]
    assert json.loads((tmp_path / "config.json").read_text())["variant"] == "tfidf_linear"
    # saved and loaded: the same computation on the same queries, exact (issue 59)
    assert np.array_equal(TfidfLinear.load(tmp_path).predict_proba(queries), proba)


@pytest.mark.parametrize("labels", [CORPUS_Y, [0, 0, 0, 1, 1, 1, 1, 1, 1]])
def test_tfidf_logistic_matches_sklearn(labels):
    """Multinomial and binary: our softmax of the stored scores is sklearn's predict_proba."""
    from sklearn.linear_model import LogisticRegression

    model = fit_tfidf_linear(CORPUS, labels, 4, "logistic", random_state=0)
    vec = model.settings.vectorizer()
    clf = LogisticRegression(max_iter=1000, random_state=0).fit(vec.fit_transform(CORPUS), labels)
    queries = ["a great movie", "awful acting", "the team won"]
    ours = model.predict_proba(queries)[:, clf.classes_]
    np.testing.assert_allclose(ours, clf.predict_proba(vec.transform(queries)), atol=1e-10)


ZH_CORPUS = [
    "球队赢得联赛冠军",
    "主场比赛球队获胜",
    "股票市场大涨",
    "基金股票收益",
    "新款手机发布",
    "手机芯片性能",
]
ZH_Y = [0, 0, 1, 1, 2, 2]


def test_tfidf_on_cjk_text_chosen_by_auto_reads_characters(tmp_path):
    """words.splitter auto -> jieba (or char): character 1-2-grams of the raw text, kept in
    the saved folder; an explicit rule (auto False) keeps its words."""
    from lttw.text.words import WordSplitter

    jieba = WordSplitter("jieba")
    model = fit_tfidf_linear(ZH_CORPUS, ZH_Y, 3, "svm", 0, words=jieba, auto=True)
    assert model.settings.analyzer == "char" and model.settings.splitter == "jieba"
    assert {"球", "球队", "队赢", "手机"} <= set(model.vocabulary)
    assert model.predict(["冠军球队", "手机性能"]).tolist() == [0, 2]
    model.save(tmp_path)
    loaded = TfidfLinear.load(tmp_path)
    assert loaded.settings.analyzer == "char"
    # saved and loaded: the same computation on the same texts, exact (issue 59)
    assert np.array_equal(loaded.predict_proba(ZH_CORPUS), model.predict_proba(ZH_CORPUS))
    explicit = fit_tfidf_linear(ZH_CORPUS, ZH_Y, 3, "svm", 0, words=jieba)
    assert explicit.settings.analyzer == "word" and "球队" in explicit.vocabulary
    assert "队赢" not in explicit.vocabulary
    english = fit_tfidf_linear(
        CORPUS, CORPUS_Y, 4, "svm", 0, words=WordSplitter("regex"), auto=True
    )
    assert english.settings.analyzer == "word"  # English keeps its words


def test_tfidf_needs_two_labels():
    from lttw.errors import UserError

    with pytest.raises(UserError, match="two labels"):
        fit_tfidf_linear(CORPUS, [0] * len(CORPUS), 2, "logistic", 0)


def test_leam_label_regularizer_is_trained(tiny_encoder_dir, batch, tmp_path):
    """train_classifier adds LEAM's label regulariser to the loss (auxiliary_loss); the other
    variants add nothing."""
    from lttw.data.batching import Batchable
    from lttw.device import Runtime
    from lttw.settings import TrainSettings
    from lttw.training.loop import train_classifier

    assert _build("encoder", tiny_encoder_dir).auxiliary_loss() is None
    model = _build("leam", tiny_encoder_dir, dropout=0.0)
    torch.testing.assert_close(model.auxiliary_loss(), model.label_regularizer())
    ids, mask = batch
    data = Batchable(
        ids.to(torch.int32).repeat(8, 1), mask.to(torch.int8).repeat(8, 1), None, LABELS.repeat(8)
    )
    cfg = TrainSettings(
        device="cpu",
        bf16=False,
        epochs=1,
        min_steps=0,
        batch_size=5,
        lr=1e-2,
        head_lr=None,
        patience=0,
        warmup_ratio=0.0,
        distributed="off",
    )  # 8 steps, one epoch: last = best
    after = {}
    for weight in (1.0, 0.0):
        model = _build("leam", tiny_encoder_dir, dropout=0.0)
        before = model.label_regularizer().item()
        model.config.label_reg_weight = weight
        train_classifier(
            model,
            data,
            data,
            cfg,
            seed=0,
            checkpoint_dir=tmp_path / str(weight),
            rt=Runtime(device=torch.device("cpu"), bf16=False),
        )
        after[weight] = model.label_regularizer().item()
    assert after[1.0] < before - 0.05 and after[1.0] < after[0.0] - 0.05  # 1.02 vs 1.12

    model.config.label_reg_weight = 0.0
    assert model.auxiliary_loss() is None
