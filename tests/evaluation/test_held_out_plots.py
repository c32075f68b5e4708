"""The evaluate stage's held-out report on the tiny profile's run: held_out.json (metrics
with bootstrap intervals) and report.html beside the predictions, the confusion matrix,
reliability diagram and precision-recall curves as DVC plots, and `dvc plots show` rendering
them as a person sees it (a headless Chromium screenshot of DVC's page)."""

from __future__ import annotations

import json

import pytest
from support.screenshots import screenshot, share_near
from support.tiny_project import run

from lttw import layout

pytestmark = pytest.mark.slow

#: the confusion matrix's darkest cell (matplotlib's "Blues" at its top)
DARK_BLUE = (8, 48, 107)
PICTURES = ["confusion.png", "precision_recall.png", "reliability.png"]


def test_held_out_report_and_plots(tiny_repro, tmp_path):
    root = tiny_repro.root
    held_out = json.loads((root / layout.eval_dir(0) / "held_out.json").read_text())
    metrics = json.loads((root / layout.fold_metrics(0)).read_text())["test"]
    assert held_out["n"] == metrics["n"]
    assert held_out["metrics"]["f1_macro"] == pytest.approx(metrics["f1_macro"])
    low, high = held_out["intervals"]["f1_macro"]
    assert low <= held_out["metrics"]["f1_macro"] <= high
    assert sorted(p.name for p in (root / layout.held_out_plots(0)).iterdir()) == PICTURES
    page = root / layout.eval_dir(0) / "report.html"
    assert share_near(screenshot(page, tmp_path / "report.png"), DARK_BLUE) > 0.001
    assert "Most confident mistakes" in page.read_text()  # with the test sample's texts

    out = tmp_path / "dvc_plots"
    run(["dvc", "plots", "show", "--out", str(out)], root)
    shown = (out / "index.html").read_text()
    for name in PICTURES:
        assert name in shown, name
    assert share_near(screenshot(out / "index.html", tmp_path / "dvc.png"), DARK_BLUE) > 0.001
