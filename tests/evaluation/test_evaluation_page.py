"""The evaluation page (``evaluation.plots.write_report_files``) as a person sees it: the
most confident mistakes with their texts (escaped), the normalised confusion matrix beside
the counts, readable precision-recall axes, reliability bins with their counts; and the
page alone where matplotlib is not installed (the slim install), naming the extra."""

from __future__ import annotations

import json

import numpy as np
from support.screenshots import screenshot, share_near
from support.torch_free import run_without

from lttw.evaluation.evaluate import evaluation_report
from lttw.evaluation.page import confident_mistakes
from lttw.evaluation.plots import precision_recall_curve, reliability_bins, write_report_files

CLASSES = ["World", "Sports", "<b>Business</b>", "Sci/Tech"]


def sample(n: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    logits = np.eye(4)[y] * 2.5 + rng.normal(0, 1, (n, 4))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    texts = [f"text {i} about <script>alert({i})</script> class {y[i]}" for i in range(n)]
    return texts, y, probs, probs.argmax(axis=1)


def test_the_page_lists_confident_mistakes_and_shows_both_matrices(tmp_path):
    texts, y, probs, pred = sample()
    report = evaluation_report(y, probs, pred, CLASSES, n_boot=50)
    files = write_report_files(tmp_path, report, y, probs, pred, "Page", texts=texts)
    assert files == ["confusion.png", "reliability.png", "precision_recall.png", "report.html"]
    page = (tmp_path / "report.html").read_text()
    mistakes = confident_mistakes(texts, y, probs, pred, CLASSES)
    assert len(mistakes) == min(20, int((pred != y).sum())) > 10
    assert mistakes[0]["score"] >= mistakes[-1]["score"]
    assert all(m["label"] != m["pred"] for m in mistakes)
    assert "Most confident mistakes" in page and "<script>" not in page
    assert "&lt;script&gt;alert(" in page and "&lt;b&gt;Business&lt;/b&gt;" in page
    pixels = screenshot(tmp_path / "report.html", tmp_path / "page.png", height=3600)
    assert share_near(pixels, (8, 48, 107)) > 0.002  # the matrices' darkest cells


def test_precision_recall_and_bins_match_scikit_learn():
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import average_precision_score
    from sklearn.metrics import precision_recall_curve as sk_curve

    texts, y, probs, pred = sample(300, seed=1)
    has, scores = (y == 2).astype(int), np.round(probs[:, 2], 2)  # ties too
    precision, recall, ap = precision_recall_curve(has, scores)
    sk_p, sk_r, _ = sk_curve(has, scores)
    assert np.allclose(sorted(zip(recall, precision)), sorted(zip(sk_r, sk_p)))
    assert np.isclose(ap, average_precision_score(has, scores))
    right, confidence = (pred == y).astype(int), probs.max(axis=1)
    x, share, counts = reliability_bins(right, confidence)
    sk_share, sk_x = calibration_curve(right, confidence, n_bins=10)
    assert np.allclose(x, sk_x) and np.allclose(share, sk_share) and counts.sum() == 300


PAGE_WITHOUT_MATPLOTLIB = """
import json, sys
from pathlib import Path
import numpy as np
from lttw.evaluation.evaluate import evaluation_report
from lttw.evaluation.plots import write_report_files
y = np.array([0, 1, 1, 0]); probs = np.array([[.9, .1], [.2, .8], [.7, .3], [.6, .4]])
pred = probs.argmax(axis=1)
report = evaluation_report(y, probs, pred, ["a", "b"], n_boot=10)
print(json.dumps(write_report_files(Path(sys.argv[1]), report, y, probs, pred,
                                    texts=["w", "x", "y", "z"])))
"""


def test_the_page_without_matplotlib_names_the_extra(tmp_path):
    done = run_without(PAGE_WITHOUT_MATPLOTLIB, str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["report.html"]
    page = (tmp_path / "report.html").read_text()
    assert "pip install &#x27;lttw[plots]&#x27;" in page and "Most confident mistakes" in page
