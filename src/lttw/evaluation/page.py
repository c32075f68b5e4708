"""``report.html``, the page of an evaluation (``evaluation.plots.write_report_files``): one
self-contained file (the pictures inlined as data: URIs, no script, no link to fetch) with
the headline metrics and their intervals, the per-class table, the pictures and the most
confident mistakes with their texts. Every name and text is HTML-escaped."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np

#: mistakes listed at most, and characters of each text shown
MAX_MISTAKES = 20
MISTAKE_CHARS = 300
#: what the pictures need where matplotlib is not installed (the slim install)
PICTURES_EXTRA = "pip install 'lttw[plots]'"


def confident_mistakes(
    texts: list[str], y_true, probs, y_pred, classes: list[str], limit: int = MAX_MISTAKES
) -> list[dict]:
    """The ``limit`` wrong predictions the model was surest of, surest first: per text its
    row (1-based), text, true and predicted labels and the confidence. Single-label: the
    predicted class's probability; multi-label: the largest of a wrongly given label's
    probability and a missed label's 1 - probability."""
    y_true, probs, y_pred = np.asarray(y_true), np.asarray(probs, np.float64), np.asarray(y_pred)
    if not len(y_true):
        return []
    if y_true.ndim == 2:
        wrong_given = np.where((y_pred == 1) & (y_true == 0), probs, 0.0).max(axis=1)
        missed = np.where((y_pred == 0) & (y_true == 1), 1.0 - probs, 0.0).max(axis=1)
        wrong = (y_true != y_pred).any(axis=1)
        score = np.maximum(wrong_given, missed)
    else:
        wrong = y_true != y_pred
        score = probs[np.arange(len(y_pred)), y_pred]
    rows = np.flatnonzero(wrong)
    rows = rows[np.argsort(-score[rows], kind="stable")][:limit]

    def names(value) -> str:
        if np.ndim(value):
            return " | ".join(classes[i] for i in np.flatnonzero(value)) or "(none)"
        return classes[int(value)]

    return [
        {
            "row": int(r) + 1,
            "text": texts[r],
            "label": names(y_true[r]),
            "pred": names(y_pred[r]),
            "score": float(score[r]),
        }
        for r in rows
    ]


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


def _shown(text: str) -> str:
    cut = text if len(text) <= MISTAKE_CHARS else text[:MISTAKE_CHARS] + "…"
    return html.escape(cut)


def _mistakes(mistakes: list[dict] | None) -> str:
    if mistakes is None:
        return ""
    if not mistakes:
        return "<h2>Most confident mistakes</h2><p>No mistakes.</p>"
    rows = "\n".join(
        f"<tr><td>{m['row']:,}</td><td>{m['score']:.3f}</td><th>{html.escape(m['label'])}</th>"
        f"<th>{html.escape(m['pred'])}</th><td class=text>{_shown(m['text'])}</td></tr>"
        for m in mistakes
    )
    return (
        f"<h2>Most confident mistakes</h2><p>The {len(mistakes)} wrong predictions the model "
        "was surest of (row: the file's data row; texts cut at "
        f"{MISTAKE_CHARS} characters).</p><table><tr><th>row</th><th>confidence</th>"
        f"<th>label</th><th>predicted</th><th>text</th></tr>{rows}</table>"
    )


def _figures(folder: Path, pictures: list[str]) -> str:
    figures = []
    for name in pictures:
        data = base64.b64encode((folder / name).read_bytes()).decode("ascii")
        small = "" if name == "confusion.png" else ' class="small"'
        figures.append(
            f'<figure{small}><img alt="{html.escape(name)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(name)}</figcaption></figure>"
        )
    return "".join(figures)


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}"
    "th,td{border:1px solid #ccc;padding:4px 10px;text-align:right}"
    "th{text-align:left;background:#f4f4f4}"
    "td.text{text-align:left;max-width:600px;overflow-wrap:anywhere}"
    "figure{display:inline-block;margin:1em 1em 1em 0;vertical-align:top}"
    "img{max-width:1080px;width:100%;border:1px solid #ddd}"
    "figure.small img{max-width:530px}"
)


def report_html(
    folder: Path,
    report: dict,
    pictures: list[str],
    title: str,
    mistakes: list[dict] | None = None,
    missing: str = "",
) -> str:
    """The self-contained page of ``report`` with ``pictures`` (files in ``folder``) and
    ``mistakes`` (``confident_mistakes``; None: no such section); ``missing``: the install
    command for pictures not drawn."""
    drawn, classes = report.get("precision_recall_classes", []), report["classes"]
    note = (
        f"<p>Precision-recall curves of the {len(drawn)} largest of {len(classes)} classes.</p>"
        if drawn and len(drawn) < len(classes)
        else ""
    )
    if missing:
        note += f"<p>No pictures: they need matplotlib ({html.escape(missing)}).</p>"
    absent = report.get("absent_classes", [])
    if absent:
        note_absent = (
            f"<p>{len(absent)} of the model's classes are neither a label nor predicted here "
            f"({html.escape(', '.join(absent[:10]))}{', ...' if len(absent) > 10 else ''}): "
            "the macro averages are over the other classes.</p>"
        )
    else:
        note_absent = ""
    intervals = report["intervals"]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{report['n']:,} labelled texts, {len(classes)} classes"
        f"{' (multi-label)' if report['multi_label'] else ''}. Intervals: "
        f"{intervals['confidence']:.0%} percentile bootstrap over "
        f"{intervals['resamples']:,} resamples.</p>{note_absent}"
        f"<h2>Metrics</h2><table><tr><th>metric</th><th>value</th><th>interval</th></tr>"
        f"{_metrics_rows(report)}</table>"
        "<h2>Per class</h2><table><tr><th>class</th><th>precision</th><th>recall</th>"
        f"<th>F1</th><th>support</th></tr>{_class_rows(report)}</table>"
        f"{_mistakes(mistakes)}"
        f"<h2>Pictures</h2>{note}{_figures(folder, pictures)}</body></html>\n"
    )
