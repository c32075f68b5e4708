"""The pictures of an evaluation (``evaluation.evaluate``), drawn with matplotlib alone (its
file backend, Agg; no scikit-learn), and the files they make with the page
(``evaluation.page``).

* ``confusion.png``: single-label, two matrices side by side: the counts, and each row
  normalised to the share of its actual class (rows actual, columns predicted); a
  multi-label model has no confusion matrix (a text is in several cells or none).
* ``reliability.png``: the model's confidence against how often it is right, in
  ``RELIABILITY_BINS`` equal-width bins, each point labelled with its count of texts:
  single-label the top class's probability and whether it is the true class; multi-label
  every (text, label) probability and whether the text has that label.
* ``precision_recall.png``: one precision-recall curve per class (one against the rest, its
  average precision in the legend), at most ``MAX_CURVES`` (the classes with the most
  texts; the page says so).

Class names are text in every picture, never mathtext or TeX (``figure_file``: a name such as
``$\\foo{$`` is drawn as written).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

CONFUSION_PNG = "confusion.png"
RELIABILITY_PNG = "reliability.png"
PR_PNG = "precision_recall.png"
REPORT_HTML = "report.html"
RELIABILITY_BINS = 10
#: precision-recall curves drawn at most (the largest classes), and confusion matrix classes
#: drawn with their counts written in the cells
MAX_CURVES = 20
MAX_ANNOTATED = 30
_DPI = 100
#: every text a plain string: no mathtext ($...$), no TeX
_PLAIN_TEXT: dict = {"text.usetex": False, "text.parse_math": False}


@contextmanager
def figure_file(path: Path, figsize: tuple[float, float], ncols: int = 1) -> Iterator:
    """(figure, axes) drawn under ``_PLAIN_TEXT`` and saved to ``path``; always closed."""
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only: no display, whatever the environment
    import matplotlib.pyplot as plt

    with plt.rc_context(_PLAIN_TEXT):
        fig, axes = plt.subplots(1, ncols, figsize=figsize, dpi=_DPI)
        try:
            yield fig, axes
            fig.tight_layout()
            fig.savefig(path, format="png")  # the path may be a temporary name
        finally:
            plt.close(fig)


def _side(n_classes: int) -> float:
    return min(6.0 + 0.35 * max(0, n_classes - 4), 24.0)


def confusion_matrix(y_true, y_pred, n_classes: int) -> np.ndarray:
    """(n_classes, n_classes) counts, rows actual, columns predicted."""
    flat = np.asarray(y_true, np.int64) * n_classes + np.asarray(y_pred, np.int64)
    return np.bincount(flat, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def _matrix(ax, values: np.ndarray, classes: list[str], title: str, fmt: str) -> None:
    ax.imshow(values, cmap="Blues", vmin=0, vmax=max(float(values.max()), 1e-12))
    ticks = np.arange(len(classes))
    ax.set_xticks(ticks, classes, rotation=90)
    ax.set_yticks(ticks, classes)
    ax.set_xlabel("predicted")
    ax.set_ylabel("actual")
    ax.set_title(title)
    if len(classes) <= MAX_ANNOTATED:
        high = values.max() / 2 if values.max() else 1
        for (i, j), value in np.ndenumerate(values):
            ax.text(j, i, format(value, fmt), ha="center", va="center",
                    color="white" if value > high else "black", fontsize="small")  # fmt: skip


def confusion_png(path: Path, y_true, y_pred, classes: list[str]) -> None:
    """The confusion matrix of single-label ids ``y_true`` / ``y_pred``: counts, and each
    row as shares of its actual class."""
    counts = confusion_matrix(y_true, y_pred, len(classes))
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)
    side = _side(len(classes))
    with figure_file(path, (2 * side, side), ncols=2) as (_, (left, right)):
        _matrix(left, counts, classes, f"Counts ({len(y_true):,} texts)", ",d")
        _matrix(right, shares, classes, "Share of each actual class (rows sum to 1)", ".2f")


def reliability_pairs(y_true, probs) -> tuple[np.ndarray, np.ndarray]:
    """(whether right, confidence) pairs the reliability diagram bins (see the docstring)."""
    y_true, probs = np.asarray(y_true), np.asarray(probs, np.float64)
    if y_true.ndim == 2:
        return y_true.reshape(-1).astype(np.int64), probs.reshape(-1)
    return (probs.argmax(axis=1) == y_true).astype(np.int64), probs.max(axis=1)


def reliability_bins(right, confidence, n_bins: int = RELIABILITY_BINS):
    """Per non-empty equal-width bin: (mean confidence, share right, count)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ids = np.clip(np.searchsorted(edges[1:-1], confidence, side="right"), 0, n_bins - 1)
    counts = np.bincount(ids, minlength=n_bins)
    sums = np.bincount(ids, weights=confidence, minlength=n_bins)
    hits = np.bincount(ids, weights=right, minlength=n_bins)
    kept = counts > 0
    return sums[kept] / counts[kept], hits[kept] / counts[kept], counts[kept]


def reliability_png(path: Path, y_true, probs) -> None:
    """The reliability diagram of ``probs`` against ``y_true``, each bin's count written
    beside its point."""
    right, confidence = reliability_pairs(y_true, probs)
    multi = np.asarray(y_true).ndim == 2
    with figure_file(path, (6, 6)) as (_, ax):
        ax.plot([0, 1], [0, 1], ls=":", color="grey", label="perfectly calibrated")
        x, y, counts = reliability_bins(right, confidence)
        ax.plot(x, y, "s-", label="model")
        for xi, yi, n in zip(x, y, counts):
            ax.annotate(f"{n:,}", (xi, yi), textcoords="offset points", xytext=(0, 7),
                        ha="center", fontsize="small")  # fmt: skip
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.08)
        ax.set_xlabel("predicted probability" + (" (each label)" if multi else " (top class)"))
        ax.set_ylabel("share right" + (" (text has the label)" if multi else ""))
        ax.set_title("Reliability diagram (texts per bin beside each point)")
        ax.legend(loc="upper left", fontsize="small")


def curve_classes(y_true, n_classes: int) -> list[int]:
    """The classes drawn in the precision-recall figure: those with texts, the largest
    ``MAX_CURVES`` of them, in class order."""
    y_true = np.asarray(y_true)
    support = y_true.sum(axis=0) if y_true.ndim == 2 else np.bincount(y_true, minlength=n_classes)
    present = [int(c) for c in np.argsort(-support, kind="stable") if support[c] > 0]
    return sorted(present[:MAX_CURVES])


def precision_recall_curve(has, scores) -> tuple[np.ndarray, np.ndarray, float]:
    """(precision, recall, average precision) of 0/1 ``has`` ranked by ``scores``, as
    scikit-learn's ``precision_recall_curve`` and ``average_precision_score`` compute them
    (one point per distinct score, highest first; recall 0 at precision 1 added)."""
    order = np.argsort(-np.asarray(scores, np.float64), kind="mergesort")
    has, scores = np.asarray(has, np.float64)[order], np.asarray(scores)[order]
    last = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]
    tp = np.cumsum(has)[last]
    fp = (last + 1) - tp
    precision = tp / (tp + fp)
    recall = tp / tp[-1] if tp[-1] else np.zeros_like(tp)
    ap = float(np.sum(np.diff(np.r_[0.0, recall]) * precision))
    return np.r_[1.0, precision], np.r_[0.0, recall], ap


def precision_recall_png(path: Path, y_true, probs, classes: list[str]) -> list[int]:
    """One precision-recall curve per class (``curve_classes``); returns the classes drawn."""
    y_true, probs = np.asarray(y_true), np.asarray(probs)
    drawn = curve_classes(y_true, len(classes))
    with figure_file(path, (7, 6)) as (_, ax):
        for c in drawn:
            has = y_true[:, c] if y_true.ndim == 2 else (y_true == c)
            precision, recall, ap = precision_recall_curve(has, probs[:, c])
            ax.plot(recall, precision, drawstyle="steps-post", label=f"{classes[c]} (AP {ap:.2f})")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("recall (share of the class's texts found)")
        ax.set_ylabel("precision (share of those found that are the class)")
        ax.set_title("Precision-recall per class (one against the rest)")
        ax.legend(loc="lower left", fontsize="small")
    return drawn


def note_png(path: Path, note: str) -> None:
    """A picture that says ``note`` (where a plot a pipeline declares has nothing to show)."""
    with figure_file(path, (6, 2)) as (_, ax):
        ax.axis("off")
        ax.text(0.5, 0.5, note, ha="center", va="center")


def write_pictures(
    folder: Path, report: dict, y_true, probs, y_pred, every_file: bool = False
) -> list[str]:
    """The PNG files of an evaluation into ``folder``; returns their names. ``every_file``:
    a multi-label evaluation's ``confusion.png`` too, saying why it has no matrix (a DVC
    plot must exist)."""
    classes = report["classes"]
    if not report["n"]:  # nothing to draw
        names = [CONFUSION_PNG, RELIABILITY_PNG, PR_PNG] if every_file else []
        for name in names:
            note_png(folder / name, "no texts to evaluate")
        return names
    names = []
    if not report["multi_label"]:
        confusion_png(folder / CONFUSION_PNG, y_true, y_pred, classes)
        names.append(CONFUSION_PNG)
    elif every_file:
        note_png(folder / CONFUSION_PNG, "multi-label: no confusion matrix (per-label scores)")
        names.append(CONFUSION_PNG)
    reliability_png(folder / RELIABILITY_PNG, y_true, probs)
    drawn = precision_recall_png(folder / PR_PNG, y_true, probs, classes)
    report["precision_recall_classes"] = [classes[c] for c in drawn]
    return names + [RELIABILITY_PNG, PR_PNG]


def write_report_files(
    folder: Path,
    report: dict,
    y_true,
    probs,
    y_pred,
    title: str = "Evaluation",
    every_file: bool = False,
    texts: list[str] | None = None,
) -> list[str]:
    """``report.html`` and the PNG files of ``report`` into ``folder``; returns the names
    (``every_file``: see ``write_pictures``). With ``texts`` (the evaluated texts, in
    order), the page lists the most confident mistakes. Without matplotlib (the slim
    install) the page alone, saying which extra draws the pictures."""
    from lttw.evaluation.page import PICTURES_EXTRA, confident_mistakes, report_html

    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        pictures, missing = [], PICTURES_EXTRA
    else:
        pictures, missing = write_pictures(folder, report, y_true, probs, y_pred, every_file), ""
    mistakes = (
        None
        if texts is None
        else confident_mistakes(texts, y_true, probs, y_pred, report["classes"])
    )
    page = report_html(folder, report, pictures, title, mistakes, missing)
    (folder / REPORT_HTML).write_text(page, encoding="utf-8")
    return [*pictures, REPORT_HTML]
