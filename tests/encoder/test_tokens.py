"""Encoder coverage (issue 26): the share of [UNK] tokens, its warning naming model.encoder,
and `lttw data check`'s line, on the tiny tokenizer, which has no CJK character."""

from __future__ import annotations

import yaml
from support.chinese_data import write_dataset
from support.cli_runner import invoke

from lttw.encoder.tokenizer import load_saved_tokenizer, load_tokenizer, save_tokenizer
from lttw.encoder.tokens import (
    UNK_SHARE_WARN,
    WordPieceFile,
    _backend_of,
    coverage_warning,
    encode_texts,
    unknown_share,
)

ENGLISH = ["the cat sat on the mat", "a dog ran"]
CHINESE = ["体育新闻 the cat", "财经快讯"]  # 8 CJK characters (one token each), 2 words


def test_unknown_share_counts_real_tokens_only(tiny_encoder_dir, tmp_path):
    tokenizer = load_tokenizer(tiny_encoder_dir)
    ids, mask = encode_texts(tokenizer, ENGLISH, 16)
    assert unknown_share(tokenizer, ids, mask) == (0.0, int(mask.sum()) - 2 * len(ENGLISH))
    ids, mask = encode_texts(tokenizer, CHINESE, 16)
    share, n = unknown_share(tokenizer, ids, mask)
    assert n == 10 and share == 8 / 10  # [CLS], [SEP] and padding aside
    save_tokenizer(tokenizer, tmp_path / "tok")
    saved = load_saved_tokenizer(tmp_path / "tok")
    assert isinstance(saved, WordPieceFile)  # lttw predict's tokenizer: the same share
    assert unknown_share(saved, *encode_texts(saved, CHINESE, 16)) == (share, n)


def test_coverage_warning_names_the_encoder_and_the_fix():
    assert coverage_warning(UNK_SHARE_WARN, "enc", "zh", online=True) is None
    online = coverage_warning(0.66, "enc", "zh", online=True)
    assert "66% of the tokens are [UNK] with model.encoder=enc" in online
    assert "bert-base-chinese" in online
    assert "bert-base-multilingual-cased" in coverage_warning(0.5, "enc", None, online=True)
    offline = coverage_warning(0.66, "enc", "zh", online=False)
    assert "bert-base" not in offline and "model.variant=tfidf_linear" in offline


def test_data_check_reports_coverage(tiny_encoder_dir, tmp_path):
    write_dataset(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {
                "data": {
                    "root": str(tmp_path),
                    "train_size": 100,
                    "test_size": 20,
                    "predict_size": 20,
                },
                "model": {"encoder": str(tiny_encoder_dir), "max_len": 32},
            }
        )
    )
    result = invoke("data", "check", "tiny_zh", "--params", params)
    out = " ".join(result.stdout.split())
    assert result.exit_code == 0, result.output
    assert "encoder coverage: 100.0% of" in out and "are [UNK] with model.encoder=" in out
    # the console may wrap inside a long path (a deep TMPDIR): compare without whitespace
    flat = "".join(result.stdout.split())
    warning = "warning: encoder coverage: 100% of the tokens are [UNK] with model.encoder="
    assert "".join(f"{warning}{tiny_encoder_dir}".split()) in flat
    assert "model.extend_vocab: the tokens stage will add the train sample's [UNK] pieces" in out


def test_fast_tokenizer_backend_gives_transformers_ids(tiny_encoder_dir):
    """``encode_texts`` runs a transformers fast tokenizer through its ``tokenizers`` backend:
    the same ids and masks as transformers' own padded, truncated call, and the tokenizer
    keeps its own settings."""
    tokenizer = load_tokenizer(tiny_encoder_dir)
    texts = ENGLISH + CHINESE + ["the cat " * 40, "", "Ünïcode  spaces\tand\nlines"]
    ids, mask = encode_texts(tokenizer, texts, 16, batch_size=3)
    assert tokenizer.is_fast and _backend_of(tokenizer) is not None
    want = tokenizer(texts, max_length=16, truncation=True, padding="max_length")
    assert ids.tolist() == want["input_ids"] and mask.tolist() == want["attention_mask"]
    before = tokenizer.backend_tokenizer.to_str()
    encode_texts(tokenizer, texts, 8)
    assert tokenizer.backend_tokenizer.to_str() == before
