"""`lttw explain` in an 80-column terminal (issue 67.7): no word or class name is cut; the
factor rows and per-class columns come back in a wide terminal."""

from __future__ import annotations

import io

from rich.console import Console

from lttw.inference.explain import render

CLASSES = ["International politics", "Sports and games", "Business", "Science/Technology"]
WORDS = ["internationalisation", "semiconductors", "championship", "a"]


def _doc() -> dict:
    entries = [
        {
            "slot": i,
            "kind": "top" if i < 2 else "bottom",
            "word": word,
            "count_in_text": 2,
            "corpus_count": 1234,
            "factor": [0.123, 0.456, 0.789, 0.012, 0.345],
            "class_affinity": {c: 0.1 * (j + 1) for j, c in enumerate(CLASSES)},
        }
        for i, word in enumerate(WORDS)
    ]
    return {
        "classes": CLASSES,
        "variant": "lttw",
        "model": "models/final",
        "prediction": {
            "label": CLASSES[2],
            "probabilities": {c: 0.25 for c in CLASSES},
        },
        "factors": {
            "rank": 5,
            "factor_label": [[0.1] * len(CLASSES)] * 5,
            "k": 2,
            "s": 2,
            "ranking": "count_then_corpus",
            "in_vocabulary": 4,
            "top": entries[:2],
            "bottom": entries[2:],
            "slots_filled": {"top": 2, "bottom": 2},
        },
        "attention": {"note": "attention: none", "positions": [], "slots": []},
    }


def _shown(width: int) -> str:
    out = io.StringIO()
    render(_doc(), Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_explain_at_80_columns_cuts_no_word_or_class_name():
    shown = _shown(80)
    assert max(map(len, shown.splitlines())) <= 80
    for word in WORDS[:3]:
        assert word in shown, word
    for name in CLASSES:
        assert name in shown, name
    assert "…" not in shown
    assert "affinity (top 3)" in shown and "factor row" not in shown


def test_a_wide_terminal_keeps_the_factor_rows():
    shown = _shown(200)
    assert "factor row W[w]" in shown and "0.123 0.456 0.789 0.012 0.345" in shown
