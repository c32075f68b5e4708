"""The deployed model leads: ``lttw report``'s first section is ``models/final``'s card (or
the summary's ``final`` block where it has none), and ``lttw exp compare`` prints the
columns people read of every DVC experiment in 100 characters."""

from __future__ import annotations

import json
from pathlib import Path

from lttw.experiments.compare import WIDTH, compare_rows, render_table
from lttw.models.card import card_metrics
from lttw.models.card_text import render_card
from lttw.reporting.deployed import deployed_doc, deployed_section
from lttw.reporting.report import render
from lttw.reporting.study_report import with_study

REPO = Path(__file__).resolve().parents[2]

ESTIMATE = {
    "f1_macro": 0.9,
    "f1_macro_low": 0.85,
    "f1_macro_high": 0.94,
    "n": 400,
    "level": 0.95,
    "from_folds": True,
    "accuracy": 0.91,
    "ece": 0.031,
}
FINAL = {"enabled": True, "trained_on": 2000, "classes": 4, "epochs": 3, "estimate": ESTIMATE}


def test_the_report_opens_with_the_deployed_model(tmp_path):
    doc = deployed_doc(tmp_path, FINAL)  # no models/final card here: the summary's block
    text = render([], None, doc)
    first = text.index("## The deployed model (`models/final`)")
    assert "macro F1 90.0% (95% interval 85.0 to 94.0) on 400 texts" in text[first:]
    assert "pooled out-of-fold predictions of the folds' models" in text[first:]
    assert "trained on 2,000 labelled texts, 4 classes" in text
    assert "expected calibration error 0.0310" in text
    assert first < text.index("Macro precision / recall / F1")  # before the study's tables
    # the paired study's section goes after it, not before (experiments/study.yaml's cells)
    with_cells, _ = with_study(text, REPO / "experiments" / "study.yaml", tmp_path / "runs")
    assert with_cells.index("## The deployed model") < with_cells.index("(the paired study)")
    assert deployed_doc(tmp_path, {"trained_on": 5}) is None  # an older summary: no section
    assert deployed_section(None) == []


def test_the_card_names_its_rows_labels_limits_and_code(tmp_path):
    labels = {"dataset": "reviews.csv", "classes": ["bad", "good"]}
    about = {
        "model": "models/final",
        "rows": "every labelled row the user gave",
        "label_counts": [1200, 800],
        "calibration": "the first fold's temperature",
        "estimate_source": "the folds",
    }
    doc = card_metrics(
        {**FINAL, "classes": 2}, about, labels, {"lttw": "0.1.0", "code_sha256": "ab"}
    )
    assert doc["label_counts"] == {"bad": 1200, "good": 800} and doc["rows"] == 2000
    meta = {"variant": "lttw", "encoder": "org/encoder", "max_len": 64}
    readme = render_card(doc, about, meta, labels, {"model": {"max_len": 64}})
    assert readme.startswith("---\nbase_model: org/encoder\n") and "library_name: lttw" in readme
    assert "| bad | 1,200 |" in readme and "cut at 64 tokens" in readme
    assert "code sha256 ab" in readme and '"max_len": 64' in readme
    local = render_card(doc, about, {**meta, "encoder": "/tmp/enc"}, labels, {})
    assert "base_model" not in local  # a local folder is no hub model


def _exp_show(name: str, final: dict | None, k: int) -> dict:
    summary = {"variant": "lttw", "test/f1_macro": {"mean": 0.88, "std": 0.01}}
    if final is not None:
        summary = {"final": final, **summary}
    return {
        "rev": "a" * 40,
        "name": name,
        "data": {
            "metrics": {"metrics/summary.json": {"data": summary}},
            "params": {"params.yaml": {"data": {"model": {"k": k}}}},
        },
    }


def test_exp_compare_prints_the_columns_people_read_in_100_characters():
    doc = [
        {
            **_exp_show("workspace", FINAL, 10),
            "experiments": [
                {"revs": [_exp_show("a-very-long-experiment-name-indeed", FINAL, 32)]},
                {"executor": {"state": "queued"}, "revs": [_exp_show("queued", FINAL, 1)]},
                {"revs": [_exp_show("before-final", None, 8)]},
            ],
        }
    ]
    rows = compare_rows(doc, ("model.k",))
    # the queued experiment has no results yet; a long name is cut to fit
    assert [r[0] for r in rows] == ["workspace", "a-very-long-experiment", "before-final"]
    assert rows[0][2:9] == ["2,000", "90.0", "85.0-94.0", "folds", "88.0", "0.031", "10"]
    assert rows[2][2:6] == ["-", "-", "-", "-"]  # a run before the final block existed
    table = render_table(rows, ("model.k",))
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["experiment", "variant", "rows", "F1"]
    assert all(len(line) <= WIDTH for line in lines) and len(lines) == 4
    assert json.dumps(doc)  # the document is left as it was
