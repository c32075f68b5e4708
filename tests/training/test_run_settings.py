"""``RunSettings``: the groups a training run reads, and its checkpoint fingerprint (a
checkpoint of another run is never resumed)."""

from __future__ import annotations

import dataclasses

import pytest

from lttw.settings import settings_from_dict
from lttw.training.run_settings import RunSettings


@pytest.mark.parametrize(
    "raw, run, expected",
    [
        ({}, 0, "9cb543954c6cc168"),
        ({"train": {"class_weight": "balanced", "log_every": 7}}, 3, "532d21743c28baeb"),
        (
            {"model": {"variant": "bilstm_attention", "vocab": "words"}, "seed": 7},
            "final",
            "0531040ea2876689",
        ),
        (
            {"model": {"variant": "tfidf_linear"}, "nmf": {"rank": 9}, "data": {"train_size": 900}},
            1,
            "3c9dd2f54f6bd69e",
        ),
    ],
)
def test_the_fingerprint_is_pinned(raw, run, expected):
    """Pinned values: a change of the fingerprint's rule (or of a default it includes, such
    as ``data.root``'s) shows here; a checkpoint written under another value is not resumed."""
    assert RunSettings.of(settings_from_dict(raw)).fingerprint(run) == expected


def test_the_fingerprint_ignores_what_does_not_change_the_run():
    """``train.log_every`` and ``final`` do not define the run; the seed, every group's value
    (those that made the input files too) and the run (fold) do."""
    base = RunSettings.of(settings_from_dict({})).fingerprint(0)
    assert RunSettings.of(settings_from_dict({"train": {"log_every": 99}})).fingerprint(0) == base
    assert RunSettings.of(settings_from_dict({"final": {"enabled": True}})).fingerprint(0) == base
    for raw in (
        {"seed": 1},
        {"folds": {"n_folds": 5}},
        {"counts": {"min_count": 2}},
        {"nmf": {"rank": 9}},
        {"data": {"train_size": 900}},
        {"words": {"splitter": "regex"}},
        {"train": {"class_weight": "balanced"}},
        {"model": {"vocab": "words", "variant": "bilstm_attention"}},
    ):
        assert RunSettings.of(settings_from_dict(raw)).fingerprint(0) != base, raw
    assert RunSettings.of(settings_from_dict({})).fingerprint(1) != base


def test_a_run_carries_only_the_groups_it_reads():
    """The groups that made the input files reach a run as one digest, not as settings."""
    fields = [field.name for field in dataclasses.fields(RunSettings)]
    assert fields == ["seed", "model", "train", "words", "counts", "inputs"]


def test_a_part_and_the_final_run_change_only_their_group():
    run = RunSettings.of(settings_from_dict({"model": {"variant": "lttw_tfidf", "max_len": 40}}))
    part = run.with_variant("tfidf_linear")
    assert (part.model.variant, part.model.max_len) == ("tfidf_linear", 40)
    assert run.model.variant == "lttw_tfidf" and part.train is run.train
    final = run.with_train(epochs=3, patience=0)
    assert (final.train.epochs, final.train.patience, final.train.lr) == (3, 0, run.train.lr)
    assert final.model is run.model
