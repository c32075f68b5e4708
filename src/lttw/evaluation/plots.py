"""The pictures of an evaluation (``evaluation.evaluate``), drawn by scikit-learn's displays
on matplotlib's file backend (Agg), and the page that shows them with the metrics.

* ``confusion.png``: ``ConfusionMatrixDisplay`` (single-label; rows actual, columns
  predicted; counts); a multi-label model has no confusion matrix (a text is in several
  cells or none).
* ``reliability.png``: ``CalibrationDisplay``, the model's confidence against how often it
  is right, in ``RELIABILITY_BINS`` equal-width bins: single-label the top class's
  probability and whether it is the true class; multi-label every (text, label) probability
  and whether the text has that label.
* ``precision_recall.png``: ``PrecisionRecallDisplay``, one curve per class (one against
  the rest), at most ``MAX_CURVES`` (the classes with the most texts; the page says so).
* ``report.html``: one self-contained page (the pictures inlined as data: URIs, no script,
  no link to fetch), the headline metrics with their intervals and the per-class table.
"""

from __future__ import annotations

import base64
import html
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


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only: no display, whatever the environment
    import matplotlib.pyplot as plt

    return plt


def _size(n_classes: int) -> tuple[float, float]:
    side = min(6.0 + 0.35 * max(0, n_classes - 4), 24.0)
    return side, side


def confusion_png(path: Path, y_true, y_pred, classes: list[str]) -> None:
    """The confusion matrix (counts) of single-label ids ``y_true`` / ``y_pred``."""
    from sklearn.metrics import ConfusionMatrixDisplay

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=_size(len(classes)), dpi=_DPI)
    try:
        ConfusionMatrixDisplay.from_predictions(
            y_true,
            y_pred,
            labels=list(range(len(classes))),
            display_labels=classes,
            ax=ax,
            colorbar=False,
            xticks_rotation="vertical",
            include_values=len(classes) <= MAX_ANNOTATED,
            cmap="Blues",
        )
        ax.set_title(f"Confusion matrix ({len(y_true):,} texts)")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def reliability_pairs(y_true, probs) -> tuple[np.ndarray, np.ndarray]:
    """(whether right, confidence) pairs the reliability diagram bins (see the docstring)."""
    y_true, probs = np.asarray(y_true), np.asarray(probs, np.float64)
    if y_true.ndim == 2:
        return y_true.reshape(-1).astype(np.int64), probs.reshape(-1)
    return (probs.argmax(axis=1) == y_true).astype(np.int64), probs.max(axis=1)


def reliability_png(path: Path, y_true, probs) -> None:
    """The reliability diagram of ``probs`` against ``y_true``."""
    from sklearn.calibration import CalibrationDisplay

    plt = _pyplot()
    right, confidence = reliability_pairs(y_true, probs)
    fig, ax = plt.subplots(figsize=(6, 6), dpi=_DPI)
    try:
        if len(np.unique(right)) < 2:  # all right or all wrong: no curve to fit, say so
            said = "every prediction " + ("right" if right.all() else "wrong")
            ax.text(0.5, 0.5, said, ha="center", va="center")
        else:
            CalibrationDisplay.from_predictions(
                right, confidence, n_bins=RELIABILITY_BINS, ax=ax, name="model"
            )
        multi = np.asarray(y_true).ndim == 2
        ax.set_xlabel("predicted probability" + (" (each label)" if multi else " (top class)"))
        ax.set_ylabel("share right" + (" (text has the label)" if multi else ""))
        ax.set_title("Reliability diagram")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def curve_classes(y_true, n_classes: int) -> list[int]:
    """The classes drawn in the precision-recall figure: those with texts, the largest
    ``MAX_CURVES`` of them, in class order."""
    y_true = np.asarray(y_true)
    support = y_true.sum(axis=0) if y_true.ndim == 2 else np.bincount(y_true, minlength=n_classes)
    present = [int(c) for c in np.argsort(-support, kind="stable") if support[c] > 0]
    return sorted(present[:MAX_CURVES])


def precision_recall_png(path: Path, y_true, probs, classes: list[str]) -> list[int]:
    """One precision-recall curve per class (``curve_classes``); returns the classes drawn."""
    from sklearn.metrics import PrecisionRecallDisplay

    plt = _pyplot()
    y_true, probs = np.asarray(y_true), np.asarray(probs)
    drawn = curve_classes(y_true, len(classes))
    fig, ax = plt.subplots(figsize=(7, 6), dpi=_DPI)
    try:
        for c in drawn:
            has = y_true[:, c] if y_true.ndim == 2 else (y_true == c)
            PrecisionRecallDisplay.from_predictions(
                has.astype(np.int64), probs[:, c], name=classes[c], ax=ax, plot_chance_level=False
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_title("Precision-recall per class (one against the rest)")
        ax.legend(loc="lower left", fontsize="small")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return drawn


def note_png(path: Path, note: str) -> None:
    """A picture that says ``note`` (where a plot a pipeline declares has nothing to show)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 2), dpi=_DPI)
    try:
        ax.axis("off")
        ax.text(0.5, 0.5, note, ha="center", va="center")
        fig.savefig(path)
    finally:
        plt.close(fig)


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


def _number(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else html.escape(str(value))


def _metrics_rows(report: dict) -> str:
    intervals = report["intervals"]
    rows = []
    for key, value in report["metrics"].items():
        interval = intervals.get(key)
        span = f"{interval[0]:.4f} - {interval[1]:.4f}" if interval else ""
        rows.append(f"<tr><th>{html.escape(key)}</th><td>{_number(value)}</td><td>{span}</td></tr>")
    return "\n".join(rows)


def _class_rows(report: dict) -> str:
    rows = []
    for name, scores in report["per_class"].items():
        cells = "".join(
            f"<td>{_number(scores.get(k, ''))}</td>"
            for k in ("precision", "recall", "f1", "support")
        )
        rows.append(f"<tr><th>{html.escape(name)}</th>{cells}</tr>")
    return "\n".join(rows)


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}"
    "th,td{border:1px solid #ccc;padding:4px 10px;text-align:right}"
    "th{text-align:left;background:#f4f4f4}"
    "figure{display:inline-block;margin:1em 1em 1em 0;vertical-align:top}"
    "img{max-width:540px;width:100%;border:1px solid #ddd}"
)


def report_html(folder: Path, report: dict, pictures: list[str], title: str) -> str:
    """The self-contained page of ``report`` with ``pictures`` (files in ``folder``)."""
    figures = []
    for name in pictures:
        data = base64.b64encode((folder / name).read_bytes()).decode("ascii")
        figures.append(
            f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(name)}</figcaption></figure>"
        )
    drawn, classes = report.get("precision_recall_classes", []), report["classes"]
    note = (
        f"<p>Precision-recall curves of the {len(drawn)} largest of {len(classes)} classes.</p>"
        if len(drawn) < len(classes)
        else ""
    )
    intervals = report["intervals"]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{report['n']:,} labelled texts, {len(classes)} classes"
        f"{' (multi-label)' if report['multi_label'] else ''}. Intervals: "
        f"{intervals['confidence']:.0%} percentile bootstrap over "
        f"{intervals['resamples']:,} resamples.</p>"
        f"<h2>Metrics</h2><table><tr><th>metric</th><th>value</th><th>interval</th></tr>"
        f"{_metrics_rows(report)}</table>"
        "<h2>Per class</h2><table><tr><th>class</th><th>precision</th><th>recall</th>"
        f"<th>F1</th><th>support</th></tr>{_class_rows(report)}</table>"
        f"<h2>Pictures</h2>{note}{''.join(figures)}</body></html>\n"
    )


def write_report_files(
    folder: Path,
    report: dict,
    y_true,
    probs,
    y_pred,
    title: str = "Evaluation",
    every_file: bool = False,
) -> list[str]:
    """``report.html`` and the PNG files of ``report`` into ``folder``; returns the names
    (``every_file``: see ``write_pictures``)."""
    pictures = write_pictures(folder, report, y_true, probs, y_pred, every_file)
    page = report_html(folder, report, pictures, title)
    (folder / REPORT_HTML).write_text(page, encoding="utf-8")
    return [*pictures, REPORT_HTML]
