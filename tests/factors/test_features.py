"""Top-k / bottom-s word selection and the latent-factor tensor; the stage scripts end to end."""

from __future__ import annotations

import shutil
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from support.datasets import full_root, needs_full
from support.stage_scripts import run_stage_script

from lttw import layout
from lttw.factors.features import FactorLookup, latent_factor_tensor, top_bottom_words
from lttw.factors.slots import slot_fill
from lttw.io import read_arrays, read_arrays_metadata, read_json
from lttw.text.words import WordSplitter

DATASETS = full_root()  # the full datasets (LTTW_DATA_ROOT), where set
VOCAB = ["a", "b", "c", "d", "e"]
INDEX = {w: i for i, w in enumerate(VOCAB)}
CORPUS = np.array([5, 10, 1, 7, 3])
#: word i has factor row [i + 1, 10 (i + 1)], so each slot's word is readable from the tensor
FACTORS = np.array([[i + 1, 10 * (i + 1)] for i in range(5)], dtype=np.float32)
CS = WordSplitter()  # the regex rule


def select(text, k, s, ranking="count_then_corpus"):
    return top_bottom_words(CS(text), k, s, INDEX, CORPUS, ranking)


def slot_words(tensor_row):
    return [VOCAB[int(r[0]) - 1] if r.any() else None for r in tensor_row]


@pytest.mark.parametrize(
    "ranking, order",
    [
        ("count_then_corpus", ["b", "a", "d", "c"]),  # a, b: 2 each, n(b)=10 > n(a)=5; d: 7 > c: 1
        ("count_then_alpha", ["a", "b", "c", "d"]),
        ("first_occurrence", ["a", "b", "c", "d"]),  # a before b in the text; c (first) before d
    ],
)
def test_ranking_rules(ranking, order):
    text = "c a A b b D xyz"  # xyz is not in the vocabulary; case folded
    assert select(text, 4, 0, ranking) == (order, [])
    assert select(text, 1, 2, ranking) == (order[:1], order[2:])


def test_short_texts_no_word_used_twice():
    text = "c a a b b d"
    assert select(text, 3, 3) == (["b", "a", "d"], ["c"])
    assert select(text, 4, 3) == (["b", "a", "d", "c"], [])
    assert select(text, 0, 3) == ([], ["a", "d", "c"])
    assert select("e", 2, 2) == (["e"], [])


def test_empty_and_out_of_vocabulary_texts():
    assert select("", 2, 2) == ([], [])
    assert select("xyz qq !!", 2, 2) == ([], [])


def test_tensor_slots_and_padding():
    texts = ["c a a b b d", "e", "", "zz top", "d d d c a b e e"]
    t = latent_factor_tensor(texts, VOCAB, CORPUS, FACTORS, 3, 2, "count_then_corpus", CS)
    assert t.shape == (5, 5, 2) and t.dtype == np.float32
    assert slot_words(t[0]) == ["b", "a", "d", "c", None]
    assert slot_words(t[1]) == ["e", None, None, None, None]
    assert not t[2].any() and not t[3].any()
    # d 3, e 2, then b a c (1 each, by corpus count 10 > 5 > 1): top d e b, bottom a c
    assert slot_words(t[4]) == ["d", "e", "b", "a", "c"]
    np.testing.assert_array_equal(t[4, 0], FACTORS[3])


def test_slot_fill_counts_top_and_bottom_slots():
    texts = ["a b c", "a a b b c d e", "zzz", "e"]  # 3, 5, 0 and 1 distinct in-vocab words
    tensor = latent_factor_tensor(texts, VOCAB, CORPUS, FACTORS, 2, 2, "count_then_corpus", CS)
    fill = slot_fill(tensor, 2, 2)
    assert (fill.top, fill.bottom) == ((2 + 2 + 0 + 1) / 4, (1 + 2 + 0 + 0) / 4)
    assert str(fill) == "1.2 of k=2 top and 0.8 of s=2 bottom slots filled on average"
    assert fill.sparse  # under half of the bottom slots
    assert not slot_fill(tensor[:2], 2, 2).sparse
    assert slot_fill(np.zeros((0, 4, 2)), 2, 2).top == 0.0
    both = slot_fill(tensor, 2, 2)
    assert slot_fill(tensor, 4, 0).top == both.top + both.bottom


def test_explain_says_how_many_slots_are_filled(tmp_path):
    from types import SimpleNamespace

    from lttw.factors.nmf import FACTORS_FILE
    from lttw.inference.explain import factor_section, render
    from lttw.io import write_arrays
    from lttw.models.files import FACTORS as FACTORS_DIR

    (tmp_path / FACTORS_DIR).mkdir()
    write_arrays(
        tmp_path / FACTORS_DIR / FACTORS_FILE,
        word_factors=FACTORS,
        factor_label=np.eye(2, dtype=np.float32),
    )
    predictor = SimpleNamespace(
        lookup=FactorLookup(VOCAB, CORPUS, FACTORS, CS),
        folder=tmp_path,
        classes=["x", "y"],
        meta={"k": 2, "s": 3, "ranking": "count_then_corpus"},
    )
    section = factor_section(predictor, "a b c zzz")  # 3 in-vocab words: 2 top, 1 bottom
    assert section["slots_filled"] == {"top": 2, "bottom": 1}
    from rich.console import Console

    console = Console(record=True, width=200)
    render(
        {
            "classes": ["x", "y"],
            "variant": "lttw",
            "model": str(tmp_path),
            "prediction": {"label": "x", "prob": 0.6, "probabilities": {"x": 0.6, "y": 0.4}},
            "factors": section,
            "attention": {"note": "", "positions": [], "slots": None},
        },
        console,
    )
    assert "slots filled: 2 of k=2 top, 1 of s=3 bottom" in console.export_text()


def test_lookup_roundtrip(tmp_path):
    import scipy.sparse as sp

    from lttw.factors.counts import save_counts
    from lttw.factors.nmf import LatentFactors, save_factors

    save_counts(tmp_path / "c", sp.csr_matrix(np.c_[CORPUS, np.zeros(5, int)]), VOCAB)
    save_factors(tmp_path / "n", LatentFactors(FACTORS, np.ones((2, 2), np.float32), 0.0, 1, "x"))
    lookup = FactorLookup.load(tmp_path / "c", tmp_path / "n", CS)
    assert lookup.rank == 2 and lookup.vocabulary == VOCAB
    np.testing.assert_array_equal(lookup.corpus_counts, CORPUS)
    np.testing.assert_array_equal(
        lookup.transform(["d d a"], 1, 1),
        latent_factor_tensor(["d d a"], VOCAB, CORPUS, FACTORS, 1, 1, "count_then_corpus", CS),
    )


def brute_force_order(tokens, ranking):
    """Independent ranking: sort distinct in-vocab words with a full comparison key."""
    words = [t for t in tokens if t in INDEX]
    c = Counter(words)
    keys = {
        "count_then_corpus": lambda w: (-c[w], -CORPUS[INDEX[w]], w),
        "count_then_alpha": lambda w: (-c[w], w),
        "first_occurrence": lambda w: (-c[w], words.index(w)),
    }
    return sorted(set(words), key=keys[ranking])


texts_strategy = st.lists(
    st.lists(st.sampled_from(VOCAB + ["B", "zz", "q"]), max_size=12).map(" ".join),
    min_size=1,
    max_size=8,
)


@hsettings(max_examples=80, deadline=None)
@given(
    texts_strategy,
    st.integers(0, 6),
    st.integers(0, 6),
    st.sampled_from(["count_then_corpus", "count_then_alpha", "first_occurrence"]),
)
def test_selection_property(texts, k, s, ranking):
    tensor = latent_factor_tensor(texts, VOCAB, CORPUS, FACTORS, k, s, ranking, CS)
    assert tensor.shape == (len(texts), k + s, 2)
    for text, row in zip(texts, tensor):
        order = brute_force_order(CS(text), ranking)
        top = order[:k]
        bottom = order[len(top) :][-s:] if s else []
        assert select(text, k, s, ranking) == (top, bottom)
        assert slot_words(row) == (
            top + [None] * (k - len(top)) + bottom + [None] * (s - len(bottom))
        )


def _run(stage, tmp_path, *args):
    """``python stages/<stage>.py ARGS`` in ``tmp_path``, in this process."""
    return run_stage_script(stage, tmp_path, *args)


def _write_params(tmp_path, **model):
    params = {
        "data": {
            "dataset": "sst2",
            "root": str(DATASETS),
            "train_size": 300,
            "test_size": 40,
            "predict_size": 40,
        },
        "folds": {"n_folds": 10, "run": [0]},
        "nmf": {"rank": 3},
        "model": {"k": 4, "s": 3, **model},
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))


@pytest.mark.slow
@needs_full("sst2")
def test_stage_scripts_end_to_end(tmp_path):
    _write_params(tmp_path)
    for stage, args in [
        ("sample", ()),
        ("folds", ()),
        ("counts", ("--fold", "0")),
        ("nmf", ("--fold", "0")),
        ("features", ("--fold", "0")),
    ]:
        done = _run(stage, tmp_path, *args)
        assert done.returncode == 0, f"{stage}: {done.stderr}"
    assert read_json(tmp_path / layout.LABELS_JSON)["classes"] == ["negative", "positive"]
    assert pd.read_parquet(tmp_path / layout.FOLDS_PARQUET).shape == (300, 12)
    assert read_json(tmp_path / layout.nmf_metrics(0))["rank"] == 3
    arrays = read_arrays(tmp_path / layout.features_file(0))
    assert {k: v.shape for k, v in arrays.items()} == {
        "train": (300, 7, 3),
        "test": (40, 7, 3),
        "predict": (40, 7, 3),
    }
    # k and s auto: resolved from the fold's train part, recorded as numbers, shaping H_tw
    _write_params(tmp_path, k="auto", s="auto")
    done = _run("features", tmp_path, "--fold", "0")
    assert done.returncode == 0, done.stderr
    meta = read_arrays_metadata(tmp_path / layout.features_file(0))
    k, s = int(meta["k"]), int(meta["s"])
    assert "model.k=auto, model.s=auto: " in done.stderr and f"-> k={k}, s={s}" in done.stderr
    assert 1 <= k == s <= 10
    assert read_arrays(tmp_path / layout.features_file(0))["test"].shape == (40, k + s, 3)
    # a failing per-fold stage leaves no output directory behind
    shutil.rmtree(tmp_path / layout.counts_dir(0))
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    params["counts"] = {"min_count": 10**9}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    done = _run("counts", tmp_path, "--fold", "0")
    assert done.returncode == 2 and "counts.min_count" in done.stderr
    assert not (tmp_path / layout.counts_dir(0)).exists()


def test_features_without_factors_do_not_depend_on_k_s_rank(tmp_path, monkeypatch):
    """Placeholders (n, 0, 0): the file is byte-identical whatever k, s and rank are."""
    import importlib

    from lttw.settings import settings_from_dict

    monkeypatch.chdir(tmp_path)
    layout.SAMPLE_DIR.mkdir(parents=True)
    for split, n in zip(layout.SPLITS, (6, 2, 3)):
        pd.DataFrame(
            {
                "text": ["a b"] * n,
                "label": [0, 1] * (n // 2) + [0] * (n % 2),
                "source_row": np.arange(n),
            }
        ).to_parquet(layout.sample_parquet(split))
    stage = importlib.import_module("lttw.stages.features")
    outputs = []
    for model in (
        {"fusion": "none"},
        {"fusion": "none", "k": 9, "s": 1},
        {"variant": "encoder", "k": 3},
    ):
        stage.main(settings_from_dict({"model": model, "nmf": {"rank": 7}}), 0)
        outputs.append((tmp_path / layout.features_file(0)).read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    arrays = read_arrays(layout.features_file(0))
    assert {k: v.shape for k, v in arrays.items()} == {
        "train": (6, 0, 0),
        "test": (2, 0, 0),
        "predict": (3, 0, 0),
    }


@pytest.mark.parametrize(
    "words_per_text, k, s, want",
    [
        ([30, 40, 25], "auto", "auto", (10, 10)),  # long texts (AG News): the paper's 10 + 10
        ([19, 18], "auto", "auto", (10, 10)),  # mean 18.5: half rounded up is 10
        ([8, 9, 8, 9, 8], "auto", "auto", (5, 5)),  # titles (THUCNews: 8.4 words) -> 5 + 5
        ([8, 9, 8, 9, 8], 10, "auto", (10, 5)),  # a number stays as given
        ([8, 9, 8, 9, 8], "auto", 0, (5, 0)),
        ([1, 0, 0], "auto", "auto", (1, 1)),  # at least one slot each
        ([], "auto", "auto", (1, 1)),
        ([3], 7, 2, (7, 2)),
    ],
)
def test_auto_slots_are_half_the_mean_distinct_words_at_most_the_papers(words_per_text, k, s, want):
    from lttw.factors.slots import resolve_slots

    assert resolve_slots(k, s, np.array(words_per_text, dtype=np.int64)) == want


def test_distinct_words_counts_each_vocabulary_word_of_a_text_once():
    from lttw.factors.features import FactorLookup
    from lttw.text.words import WordSplitter

    lookup = FactorLookup(
        ["a", "b", "c"], np.array([3, 2, 1]), np.ones((3, 2), np.float32), WordSplitter()
    )
    got = lookup.distinct_words(["a a b", "zzz", "", "c b a c", "A b"])
    assert got.tolist() == [2, 0, 0, 3, 2]  # repeats once, out-of-vocabulary none, lowercased
