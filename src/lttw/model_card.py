"""A model folder's card: ``README.md`` for people (a Hugging Face style card: YAML front
matter, then the data, the labels and their counts, the metrics with their intervals, the
calibration, known limits, the parameters and the code version that made the model) and
``metrics.json`` for programs (``GET /info``'s ``metrics``, ``lttw verify``).

The final stage writes both into ``models/final`` (``training.final_card``); ``lttw
export`` carries them, or writes them for a folder that has none (``card_of_metrics``).
"""

from __future__ import annotations

import json
from pathlib import Path

from lttw.io import atomic_path, read_json, write_json
from lttw.model_files import CARD, METRICS

#: the version of ``metrics.json``'s layout
CARD_VERSION = 1


def _pct(value) -> str:
    return f"{100 * value:.1f}" if isinstance(value, (int, float)) else "n/a"


def _interval(block: dict) -> str:
    low, high = block.get("f1_macro_low"), block.get("f1_macro_high")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return ""
    level = int(round(100 * block.get("level", 0.95)))
    return f" ({level}% interval {_pct(low)} to {_pct(high)})"


def _hub_name(encoder) -> bool:
    """Whether ``encoder`` names a hub model (``org/name``), not a local folder."""
    text = str(encoder or "")
    return text.count("/") == 1 and not text.startswith((".", "/", "~"))


def headline(doc: dict) -> str:
    """One line: the deployed model's macro F1 with its interval and source, from a card's
    ``metrics.json`` (``lttw verify``, ``lttw report``)."""
    estimate = doc.get("estimate") or {}
    if "f1_macro" not in estimate:
        return "no quality estimate recorded"
    return (
        f"macro F1 {_pct(estimate['f1_macro'])}%{_interval(estimate)} on "
        f"{estimate.get('n', 0):,} texts, from {doc.get('estimate_source', '?')}"
    )


def card_metrics(record: dict, about: dict, labels_info: dict, code: dict) -> dict:
    """``metrics.json``: the model's rows, classes and label counts, its estimate (with its
    interval; ``about["estimate_source"]``: where it comes from, in words), calibration and
    own held-out figures."""
    classes = labels_info.get("classes", [])
    per_class = about.get("label_counts") or (labels_info.get("per_class") or {}).get("train")
    estimate = record.get("estimate", {})
    return {
        "card_version": CARD_VERSION,
        "rows": record.get("trained_on"),
        "rows_from": about.get("rows"),
        "classes": len(classes),
        "label_counts": {str(c): int(n) for c, n in zip(classes, per_class or [], strict=False)},
        "estimate": estimate,
        "estimate_source": about.get("estimate_source", "unknown"),
        "calibration": {"ece": estimate.get("ece"), "how": about.get("calibration")},
        **({"test": record["test"]} if "test" in record else {}),
        "training": {
            k: record[k] for k in ("epochs", "fold_best_epochs", "time_per_epoch_s") if k in record
        },
        "code": code,
    }


def render_card(doc: dict, about: dict, meta: dict, labels_info: dict, params: dict) -> str:
    """``README.md`` of the card ``doc`` (``card_metrics``)."""
    variant, encoder = meta.get("variant", "?"), meta.get("encoder")
    counts = doc.get("label_counts", {})
    lines = [
        "---",
        "library_name: lttw",
        "pipeline_tag: text-classification",
        "tags: [" + ", ".join(dict.fromkeys(["lttw", "text-classification", variant])) + "]",
        *([f"base_model: {encoder}"] if _hub_name(encoder) else []),
        "---",
        "",
        f"# {about.get('model', 'model')}: a `{variant}` text classifier",
        "",
        f"Load it with `lttw predict --model DIR`, `lttw serve --model DIR` or "
        f"`lttw.load_model(DIR)`. {headline(doc)}.",
        "",
        "## Data",
        "",
        f"- dataset: `{labels_info.get('dataset', '?')}`; trained on {doc.get('rows') or 0:,} "
        f"labelled texts: {about.get('rows', '?')}",
        f"- {doc.get('classes', 0)} classes"
        + ("; several labels per text (multi-label)" if meta.get("multi_label") else ""),
        "",
        "| label | training texts |",
        "| --- | --- |",
        *(f"| {label} | {n:,} |" for label, n in counts.items()),
        "",
        "## Metrics",
        "",
        f"- estimate: {headline(doc).split(', from ')[0]}; it comes from "
        f"{doc.get('estimate_source', '?')}",
    ]
    test = doc.get("test")
    if test and "f1_macro" in test:
        lines.append(
            f"- held-out test sample ({test.get('n', 0):,} texts): macro P / R / F1 "
            f"{_pct(test.get('precision_macro'))} / {_pct(test.get('recall_macro'))} / "
            f"{_pct(test.get('f1_macro'))}%"
        )
    calibration = doc.get("calibration", {})
    ece = calibration.get("ece")
    lines += [
        "",
        "## Calibration",
        "",
        f"- {calibration.get('how') or 'none recorded'}",
        "- expected calibration error on the estimate's texts: "
        + (f"{ece:.4f}" if isinstance(ece, float) else "n/a (multi-label, or not measured)"),
        "",
        "## Known limits",
        "",
        f"- texts are cut at {meta.get('max_len', '?')} tokens (`model.max_len`): words "
        "beyond do not count",
        "- it only knows the labels above; every text gets one of them (multi-label: a set)",
        "- the estimate holds for texts like the training data; other sources, languages or "
        "periods can score lower",
        "",
        "## Parameters",
        "",
        "```json",
        json.dumps(params, indent=1, sort_keys=True, default=str),
        "```",
        "",
        "## Code version",
        "",
        f"lttw {doc.get('code', {}).get('lttw', '?')}, code sha256 "
        f"`{doc.get('code', {}).get('code_sha256', '?')}`.",
        "",
    ]
    return "\n".join(lines)


def write_card(folder: Path, doc: dict, readme: str) -> None:
    """Write ``metrics.json`` and ``README.md`` into ``folder``."""
    write_json(folder / METRICS, doc)
    with atomic_path(folder / CARD) as tmp:
        tmp.write_text(readme, encoding="utf-8")


def read_card(folder: str | Path) -> dict | None:
    """A folder's ``metrics.json`` when it is a card's (has ``card_version``); else None."""
    path = Path(folder) / METRICS
    if not path.is_file():
        return None
    doc = read_json(path)
    return doc if isinstance(doc, dict) and "card_version" in doc else None
