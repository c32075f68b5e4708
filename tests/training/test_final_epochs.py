"""The final model's epoch count: the median over folds.run of each fold's epochs up to its
best validation epoch (``best_epoch + 1``), rounded up; a fold without a record is a one-line
error naming its file."""

from __future__ import annotations

import pytest

from lttw import layout
from lttw.errors import UserError
from lttw.io import write_json
from lttw.training.final import chosen_epochs


def record(best_epochs: dict[int, int]) -> None:
    for fold, best in best_epochs.items():
        write_json(layout.train_metrics(fold), {"best_epoch": best, "epochs_run": best + 2})


@pytest.mark.parametrize(
    "best, want",
    [
        ({0: 1}, 2),  # one fold: its best epoch (0-based) + 1
        ({0: 0, 1: 2, 2: 4}, 3),  # the median of 1, 3, 5
        ({0: 1, 1: 2}, 3),  # the median of 2 and 3 is 2.5: rounded up
    ],
)
def test_epochs_are_the_rounded_up_median_of_the_folds_best(tmp_path, monkeypatch, best, want):
    monkeypatch.chdir(tmp_path)
    record(best)
    epochs, per_fold = chosen_epochs(sorted(best))
    assert epochs == want
    assert per_fold == {str(f): b + 1 for f, b in best.items()}


def test_only_the_folds_in_folds_run_count(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record({0: 0, 1: 9})  # fold 1's record is left over from an earlier folds.run
    assert chosen_epochs([0]) == (1, {"0": 1})


def test_a_fold_without_training_record_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record({0: 1})
    with pytest.raises(UserError, match="fold_3.json: missing; run the train stage for fold 3"):
        chosen_epochs([0, 3])
