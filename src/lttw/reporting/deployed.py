"""The first section of ``lttw report``: the deployed model, ``models/final``, from its card's
``metrics.json`` (``lttw.models.card``; else the summary's ``final`` block): its rows,
classes, estimate with its interval and where it comes from, calibration, and its own
held-out figures. The folds' tables follow it as the study."""

from __future__ import annotations

from pathlib import Path

from lttw import layout
from lttw.evaluation.estimate import SOURCES
from lttw.models.card import headline, read_card


def deployed_doc(root: Path, summary_final: dict | None) -> dict | None:
    """The card of ``root``'s ``models/final``; else one made of the summary's ``final``
    block (numbers only: the source named from ``from_folds``); None without either."""
    card = read_card(root / layout.FINAL_MODEL_DIR)
    if card is not None:
        return card
    final = summary_final or {}
    if "estimate" not in final:
        return None
    source = "folds" if final["estimate"].get("from_folds") else "test"
    return {
        "rows": final.get("trained_on"),
        "classes": final.get("classes"),
        "estimate": final["estimate"],
        "estimate_source": SOURCES[source],
        "calibration": {"ece": final["estimate"].get("ece")},
        **({"test": final["test"]} if "test" in final else {}),
    }


#: the section's title (at the report's ``##`` level)
DEPLOYED_TITLE = f"## The deployed model (`{layout.FINAL_MODEL_DIR.as_posix()}`)"


def deployed_section(doc: dict | None, level: str = "##") -> list[str]:
    """Markdown lines of the section (none where ``doc`` is None)."""
    if doc is None:
        return []
    estimate = doc.get("estimate", {})
    ece = (doc.get("calibration") or {}).get("ece")
    how = (doc.get("calibration") or {}).get("how")
    lines = [
        "",
        f"{level} {DEPLOYED_TITLE[3:]}",
        "",
        f"- {headline(doc)}.",
        f"- trained on {doc.get('rows') or 0:,} labelled texts"
        + (f" ({doc['rows_from']})" if doc.get("rows_from") else "")
        + f", {doc.get('classes') or 0} classes.",
        "- calibration: "
        + (f"expected calibration error {ece:.4f}" if isinstance(ece, float) else "n/a")
        + (f"; {how}" if how else "")
        + ".",
    ]
    test = doc.get("test") or {}
    if "f1_macro" in test and not estimate.get("from_folds", True):
        lines.append(
            f"- its own held-out test sample: {test.get('n', 0):,} texts, accuracy "
            f"{100 * test.get('accuracy', float('nan')):.1f}%."
        )
    lines += [
        "",
        "What follows is the study: the folds' models (one per fold, each trained on its "
        "fold's train part), by dataset and variant.",
    ]
    return lines
