"""The evaluate stage's held-out report on the tiny profile's run: held_out.json (metrics
with bootstrap intervals) and report.html beside the predictions, the confusion matrix,
reliability diagram and precision-recall curves as DVC plots, the training curves as a picture,
and `dvc plots show` rendering every chart offline as a person sees it (a headless Chromium
screenshot of DVC's page, every picture loaded, no script from the network)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from support.dvc_runner import dvc
from support.screenshots import page_dom, screenshot, share_near
from support.tiny_project import REPO

from lttw import layout

pytestmark = pytest.mark.slow

#: the confusion matrix's darkest cell (matplotlib's "Blues" at its top)
DARK_BLUE = (8, 48, 107)
PICTURES = ["confusion.png", "precision_recall.png", "reliability.png"]
#: appended to a copy of DVC's page: the number of pictures and those Chromium could not load
_COUNT_IMAGES = """<script>window.onload = () => {
  const broken = [...document.images].filter(i => !i.complete || !i.naturalWidth);
  document.body.dataset.images = document.images.length;
  document.body.dataset.broken = broken.map(i => i.src).join(" ");
};</script>"""


def _loaded_images(page, profile) -> tuple[int, str]:
    """(pictures on ``page``, the sources of those Chromium could not load)."""
    check = page.with_name("check.html")
    check.write_text(page.read_text().replace("</body>", _COUNT_IMAGES + "</body>"))
    dom = page_dom(check.as_uri(), profile, wait_ms=5000)
    body = re.search(r'<body data-images="(\d+)" data-broken="([^"]*)"', dom)
    assert body, dom[:2000]
    return int(body.group(1)), body.group(2)


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

    assert (root / layout.training_curves_png(0)).is_file()


def test_dvc_plots_show_draws_every_chart_offline(tiny_repro, tmp_path):
    """Every plot dvc.yaml declares is a picture: DVC's page loads no script (its data
    plots' come from a CDN, blank offline) and Chromium loads each picture, the held-out
    ones, the training curves and the study's learning curve."""
    root = tiny_repro.root
    study = root / "evidence"  # the repository's study, for its learning curve; then gone
    study.mkdir()
    shutil.copyfile(REPO / "evidence" / "learning_curve.png", study / "learning_curve.png")
    out = tmp_path / "dvc_plots"
    try:
        dvc(["plots", "show", "--out", str(out)], root)
    finally:
        shutil.rmtree(study)
    shown = (out / "index.html").read_text()
    assert "<script" not in shown and "http" not in shown, "a chart that needs the network"
    for name in [*PICTURES, "training", "learning_curve.png"]:
        assert name in shown, name
    images, broken = _loaded_images(out / "index.html", tmp_path / "profile")
    assert (images, broken) == (len(PICTURES) + 2, "")
    assert share_near(screenshot(out / "index.html", tmp_path / "dvc.png"), DARK_BLUE) > 0.001
