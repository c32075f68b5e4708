"""`lttw data issues` (issue 67.2) on a project's files whose training labels were flipped on
purpose: AG News rows, 8% of the labels moved to another class, out-of-fold probabilities
of a TF-IDF + logistic regression written where the evaluate stage writes the folds' (one
file a fold, part ``fold_test``). The command finds most flips, and most of what it lists
are flips."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from support.datasets import EMBEDDED
from typer.testing import CliRunner

from lttw.cli import app

FOLDS = 5
ROWS_PER_CLASS = 250
FLIPPED = 0.08


@pytest.fixture
def flipped_project(tmp_path):
    rows = pd.read_parquet(EMBEDDED / "ag_news" / "train.parquet")
    rows = rows.groupby("label", group_keys=False).head(ROWS_PER_CLASS).reset_index(drop=True)
    rng = np.random.default_rng(0)
    flips = rng.choice(len(rows), int(FLIPPED * len(rows)), replace=False)
    labels = rows["label"].to_numpy().copy()
    labels[flips] = (labels[flips] + rng.integers(1, 4, len(flips))) % 4
    sample = tmp_path / "data" / "sample"
    sample.mkdir(parents=True)
    pd.DataFrame({"text": rows["text"], "label": labels}).to_parquet(sample / "train.parquet")
    classes = ["World", "Sports", "Business", "Sci/Tech"]
    (sample / "labels.json").write_text(json.dumps({"classes": classes}))
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=0)
    features = TfidfVectorizer(sublinear_tf=True).fit_transform(rows["text"])
    probs = cross_val_predict(
        LogisticRegression(C=10, max_iter=1000), features, labels, cv=folds, method="predict_proba"
    )
    for fold, (_, test) in enumerate(folds.split(features, labels)):
        folder = tmp_path / "data" / "eval" / f"fold_{fold}"
        folder.mkdir(parents=True)
        part = pd.DataFrame(
            {
                "part": "fold_test",
                "row": test,
                "label": labels[test],
                "pred": probs[test].argmax(axis=1),
                "probs": list(probs[test].astype(np.float32)),
            }
        )
        part.to_parquet(folder / "predictions.parquet")
    runs = list(range(FOLDS))
    (tmp_path / "params.yaml").write_text(f"folds: {{n_folds: {FOLDS}, run: {runs}}}\n")
    return tmp_path, set(flips.tolist()), classes


def test_the_flipped_labels_are_found(flipped_project, monkeypatch):
    root, flips, classes = flipped_project
    monkeypatch.chdir(root)
    result = CliRunner().invoke(app, ["data", "issues", "--top", "5"])
    assert result.exit_code == 0, result.output
    assert f"among {4 * ROWS_PER_CLASS} of the {4 * ROWS_PER_CLASS} training rows" in result.output
    table = pd.read_csv(root / "label_issues.csv")
    assert list(table.columns) == ["row", "text", "label", "suggested", "score", "suggested_prob"]
    found = set(table["row"])
    precision, recall = len(found & flips) / len(found), len(found & flips) / len(flips)
    top = set(table["row"].head(len(flips)))  # as many as were flipped, likeliest first
    at_flips = len(top & flips) / len(flips)
    print(
        f"flips {len(flips)}, listed {len(found)}: precision {precision:.2f}, "
        f"recall {recall:.2f}, precision of the first {len(flips)} {at_flips:.2f}"
    )
    # a TF-IDF model on 1,000 texts (80 flipped: 8%): AG News' own ambiguous rows (Business /
    # Sci/Tech) are listed beside the flips. Measured: precision 0.40 (five times the 8% a
    # random pick gets), recall 0.76, 0.51 of the first 80 are flips
    assert recall >= 0.7 and precision >= 4 * FLIPPED and at_flips >= 0.45
    assert table["score"].is_monotonic_increasing  # likeliest first
    assert set(table["label"]) <= set(classes) and (table["label"] != table["suggested"]).all()
    assert len(result.output.strip().splitlines()) == 1 + 5


def test_issues_without_per_class_probabilities_is_one_line(flipped_project, monkeypatch):
    root, _, _ = flipped_project
    monkeypatch.chdir(root)
    old = root / "data/eval/fold_0/predictions.parquet"
    pd.read_parquet(old).drop(columns=["probs"]).to_parquet(old)
    result = CliRunner().invoke(app, ["data", "issues"])
    assert result.exit_code == 2 and "rerun the evaluate stage" in result.output
    assert not os.path.exists(root / "label_issues.csv")
