"""The evaluate stage on a multi-label tfidf_linear model folder (issue 42): labels decided
at the folder's tuned thresholds, micro / macro / per-label metrics and subset accuracy in
metrics/folds, list-valued predictions, and no confusion matrix."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
from support.multi_label_data import NEWS_LISTS, NEWS_TEXTS

from lttw import layout

TEXTS, LISTS = NEWS_TEXTS, NEWS_LISTS  # class 2 never present


def _evaluate_stage():
    return importlib.import_module("lttw.stages.evaluate")


def test_evaluate_stage_scores_a_multi_label_model(tmp_path, monkeypatch):
    from lttw.data.fold_inputs import FoldInputs
    from lttw.data.label_sets import indicator_matrix
    from lttw.io import read_json, write_arrays
    from lttw.settings import settings_from_dict
    from lttw.text.words import WordSplitter, write_rule
    from lttw.training.fold import RunPaths, train_run
    from lttw.training.run_settings import RunSettings

    monkeypatch.chdir(tmp_path)
    y = indicator_matrix(LISTS, 3)
    inputs = FoldInputs(
        classes=["business", "sport", "weather"],
        parts={"train": np.arange(8), "val": np.arange(8), "fold_test": np.arange(4)},
        labels={"train": y, "test": y[4:], "predict": y[:0]},
        texts={"train": TEXTS, "test": TEXTS[4:], "predict": []},
    )
    write_rule(layout.counts_dir(0), WordSplitter("regex", r"(?u)\b\w+\b", True))
    layout.features_file(0).parent.mkdir(parents=True, exist_ok=True)
    write_arrays(layout.features_file(0), none=np.zeros(0, np.float32))
    paths = RunPaths(
        layout.counts_dir(0), layout.nmf_dir(0), layout.features_file(0),
        layout.checkpoint_dir(0), layout.model_dir(0), layout.train_metrics(0), None,
    )  # fmt: skip
    settings = settings_from_dict(
        {"model": {"variant": "tfidf_linear", "linear_model": "logistic"}}
    )
    train_run(RunSettings.of(settings), 0, inputs, paths)
    stage = _evaluate_stage()
    monkeypatch.setattr(stage, "load_fold_inputs", lambda fold: inputs)
    stage.main(settings, 0)

    metrics = read_json(layout.fold_metrics(0))
    test = metrics["test"]
    for key in ("f1_macro", "f1_micro", "precision_micro", "recall_micro", "subset_accuracy"):
        assert 0.0 <= test[key] <= 1.0
    assert test["n"] == 4 and set(test["per_label"]) == {"business", "sport", "weather"}
    assert test["per_label"]["weather"]["support"] == 0
    assert "predict" not in metrics  # an absent predict sample
    report = read_json(layout.eval_dir(0) / "report.json")
    assert "confusion" not in report["test"]
    predictions = pd.read_parquet(layout.eval_dir(0) / "predictions.parquet")
    test_rows = predictions[predictions["part"] == "test"]
    assert [list(v) for v in test_rows["label"]] == LISTS[4:]
    assert all(len(v) >= 1 for v in test_rows["pred"])  # at_least_one
    confusion = pd.read_csv(layout.confusion_csv(0))
    assert list(confusion.columns) == ["actual", "predicted"] and confusion.empty
    # the held-out report as `lttw evaluate` writes it; every declared DVC plot is there
    held_out = read_json(layout.eval_dir(0) / "held_out.json")
    assert held_out["multi_label"] and "f1_micro" in held_out["intervals"]
    assert (layout.eval_dir(0) / "report.html").is_file()
    pictures = sorted(p.name for p in layout.held_out_plots(0).iterdir())
    assert pictures == ["confusion.png", "precision_recall.png", "reliability.png"]
