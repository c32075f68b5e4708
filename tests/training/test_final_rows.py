"""The final model's rows and estimate: ``final.rows: all`` adds a test (and predict) sample
carved from the user's own rows to its training rows (an official test split stays held
out), ``join_samples`` appends them to the train split with their token arrays, and the
estimate is macro F1 with a seeded bootstrap interval, from the folds' pooled out-of-fold
predictions where the model has no held-out test sample of its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lttw import layout
from lttw.data.fold_inputs import FoldInputs, _joined, join_samples
from lttw.errors import UserError
from lttw.evaluation.estimate import bootstrap_interval, estimate_of, fold_estimate
from lttw.io import write_json, write_parquet
from lttw.training.final import _carved


def labels_json(pools: dict, sizes: dict) -> None:
    write_json(layout.LABELS_JSON, {"classes": ["a", "b"], "pools": pools, "sizes": sizes})


@pytest.mark.parametrize(
    "pools, sizes, rows, want",
    [
        # one file of the user's: the test sample was carved from it, so the model learns it
        ({"test": None, "predict": None}, {"test": 32, "predict": 0}, "all", ("test",)),
        ({"test": None, "predict": None}, {"test": 32, "predict": 8}, "all", ("test", "predict")),
        # an official test split stays held out
        ({"test": "test", "predict": "test"}, {"test": 32, "predict": 8}, "all", ()),
        # final.rows: train_sample keeps the carved test sample out
        ({"test": None, "predict": None}, {"test": 32, "predict": 0}, "train_sample", ()),
    ],
)
def test_all_rows_add_the_samples_carved_from_the_users_rows(
    tmp_path, monkeypatch, pools, sizes, rows, want
):
    monkeypatch.chdir(tmp_path)
    labels_json(pools, sizes)
    assert _carved(rows) == want


def test_joined_samples_follow_the_train_split_texts_labels_and_tokens():
    inputs = FoldInputs(
        classes=["a", "b"],
        parts={},
        labels={"train": np.array([0, 1]), "test": np.array([1]), "predict": np.array([0])},
        texts={"train": ["t0", "t1"], "test": ["s0"], "predict": ["p0"]},
    )
    joined = join_samples(inputs, ("test",))
    assert joined.texts["train"] == ["t0", "t1", "s0"] and joined.texts["test"] == []
    assert joined.labels["train"].tolist() == [0, 1, 1] and joined.labels["test"].size == 0
    assert joined.texts["predict"] == ["p0"] and joined.joined == ("test",)
    assert join_samples(inputs, ()) is inputs
    ids = {"train_input_ids": np.ones((2, 4)), "test_input_ids": np.zeros((1, 4))}
    tokens = _joined(ids, joined.joined, key=lambda split: f"{split}_input_ids")
    assert tokens["train_input_ids"].shape == (3, 4) and tokens["test_input_ids"].shape == (0, 4)
    assert tokens["train_input_ids"][2].tolist() == [0, 0, 0, 0]  # in the texts' order


def test_the_interval_holds_the_figure_is_seeded_and_narrows_with_rows():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 3, 60)
    noisy = np.where(rng.random(60) < 0.7, small, (small + 1) % 3)
    low, high = bootstrap_interval(small, noisy, 3, seed=1)
    figure = estimate_of(small, noisy, 3, "folds", seed=1)
    assert low <= figure["f1_macro"] <= high and figure["from_folds"] is True
    assert (figure["f1_macro_low"], figure["f1_macro_high"]) == (low, high)  # same seed
    big = np.tile(small, 20)
    big_low, big_high = bootstrap_interval(big, np.tile(noisy, 20), 3, seed=1)
    assert big_high - big_low < (high - low) / 2
    assert all(np.isnan(bootstrap_interval(small[:0], noisy[:0], 3)))


def test_the_folds_estimate_pools_their_fold_test_predictions(tmp_path):
    for fold, (labels, preds, ece) in enumerate(
        [([0, 1, 1], [0, 1, 0], 0.1), ([1, 0], [1, 0], 0.4)]
    ):
        frame = pd.DataFrame(
            {
                "part": ["fold_test"] * len(labels) + ["test"],
                "label": labels + [0],
                "pred": preds + [1],
                "prob": [0.5] * (len(labels) + 1),
            }
        )
        write_parquet(tmp_path / layout.eval_dir(fold) / "predictions.parquet", frame)
        write_json(
            tmp_path / layout.fold_metrics(fold), {"fold_test": {"ece": ece, "n": len(labels)}}
        )
    estimate = fold_estimate([0, 1], 2, root=tmp_path)
    pooled = estimate_of(np.array([0, 1, 1, 1, 0]), np.array([0, 1, 0, 1, 0]), 2, "folds")
    assert estimate["n"] == 5 and estimate["f1_macro"] == pooled["f1_macro"]
    assert estimate["ece"] == pytest.approx((0.1 * 3 + 0.4 * 2) / 5)  # weighted by rows
    with pytest.raises(UserError, match="fold_2/predictions.parquet: missing; run the evaluate"):
        fold_estimate([0, 2], 2, root=tmp_path)


def test_the_card_spells_the_model_folders_files_as_the_loader_does():
    """``training.final_card`` records the card's checksums itself (importing ``lttw.models``
    would cost the copy of ``final.enabled: false`` torch's start-up)."""
    from lttw.models.card import CARD, METRICS
    from lttw.models.files import META
    from lttw.models.folder_files import CHECKSUMS, TOP_LEVEL
    from lttw.training import final_card

    assert (final_card.META, final_card.CHECKSUMS) == (META, CHECKSUMS)
    assert {CARD, METRICS} <= set(TOP_LEVEL)  # checked by `lttw verify`, carried by export


def test_the_confusion_matrix_bootstrap_is_the_row_bootstrap():
    """Single-label resamples are drawn as multinomial counts of the confusion matrix's
    cells: the same distribution as resampling the rows, whatever their number."""
    from lttw.evaluation.metrics import classification_metrics

    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 300)
    pred = np.where(rng.random(300) < 0.6, y, (y + 1) % 3)
    draws = (rng.integers(0, 300, 300) for _ in range(1000))
    rows = [classification_metrics(y[r], pred[r], 3)["f1_macro"] for r in draws]
    low, high = bootstrap_interval(y, pred, 3, seed=0)
    assert np.percentile(rows, [2.5, 97.5]) == pytest.approx([low, high], abs=0.02)
