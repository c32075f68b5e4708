"""``lttw report``: ``metrics/report.md`` from the metrics files that runs wrote (run folders,
read by ``reporting.runs``).

For each dataset and variant: macro P / R / F1 on the held-out test sample, mean ± sample std
over folds, time per epoch, samples per second and device, next to the paper's numbers; and a
paired test of LTTW against every other variant on the per-fold held-out test F1. Every
number is read: the runs' from their files, the paper's from the grid files' ``paper`` block
(``experiments/paper.yaml``; ``reporting.paper_numbers``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lttw.evaluation.metrics import held_out_source
from lttw.experiments.cell_folder import REFERENCE, Run, read_test_predictions
from lttw.experiments.paper_numbers import PaperTables
from lttw.models.card import headline
from lttw.reporting.deployed import deployed_section
from lttw.reporting.runs import merge_runs
from lttw.reporting.stats import WILCOXON_MIN, paired_test, pct, pooled_mcnemar
from lttw.settings import BASELINES

DATASET_NAMES = {
    "ag_news": "AG News",
    "yahoo_answers": "Yahoo! Answers",
    "sst2": "SST-2",
    "thucnews": "THUCNews",
}
#: report rows, in order: LTTW and its ablations, then every other variant (settings.BASELINES)
#: -> the paper's name for the same model, where the paper has one
VARIANTS = {
    "LTTW": "LTTW",
    "LTTW-M": "LTTW-M",
    "LTTW-L": "LTTW-L",
    "LTTW-Att": "LTTW-Att",
    **{v: {"encoder": "BERT", "encoder_cnn": "BERT-CNN"}.get(v) for v in BASELINES},
}


def _plain(values: np.ndarray, digits: int = 1) -> str:
    return f"{values.mean():.{digits}f}" if values.size else "n/a"


def _paper(dataset: str, variant: str, paper: PaperTables) -> str:
    row = paper.get(dataset, {}).get(VARIANTS.get(variant) or "")
    if row is None:
        return "–"
    p, r, f1, seconds = row
    return f"{p:.2f} / {r:.2f} / {f1:.2f}" + (f" ({seconds:.2f} s/epoch)" if seconds else "")


def _folds(run: Run) -> str:
    """How many folds a row has: ``4 of 10 (running)`` for a cell still running."""
    planned = f" of {run.planned}" if run.planned and run.planned != len(run.folds) else ""
    return f"{len(run.folds)}{planned}" + (" (running)" if run.partial else "")


def _epoch_time(run: Run) -> str:
    """Time per epoch without the first step's start-up (compilation, CUDA context,
    allocator warm-up), and that start-up beside it; ``*``: runs that did not measure it
    apart, whose time includes it."""
    steady = run.values("steady_time_per_epoch_s", None)
    if len(steady) == len(run.folds) and steady.size:
        startup = run.values("startup_s", None)
        return f"{steady.mean():.2f}" + (f" (+{startup.mean():.1f})" if startup.size else "")
    plain = run.values("time_per_epoch_s", None)
    return f"{plain.mean():.2f}*" if plain.size else "n/a"


def _device(run: Run) -> str:
    """The device (the card's name where recorded) and how many cells trained on it at once."""
    names = sorted(
        {
            str(
                m.get("device_name")
                or m.get("device")
                or run.trained.get(fold, {}).get("card")
                or "?"
            )
            for fold, m in run.folds.items()
        }
        | {str(r["card"]) for r in run.trained.values() if r.get("card")}
    )
    shared = sorted({int(r["cells_at_once"]) for r in run.trained.values() if "cells_at_once" in r})
    if shared:
        count = f"{shared[0]}" if len(shared) == 1 else f"{shared[0]}-{shared[-1]}"
        return ", ".join(names) + f" ({count} cell(s) at once)"
    return ", ".join(names)


def _row(dataset: str, variant: str, run: Run | None, paper: PaperTables) -> str:
    paper_name = VARIANTS.get(variant) or ""
    name = f"{variant} (paper: {paper_name})" if paper_name and paper_name != variant else variant
    if run is None:
        return f"| {name} | not run | | | | | | | {_paper(dataset, variant, paper)} |"
    cells = [
        _folds(run),
        pct(run.values("precision_macro")),
        pct(run.values("recall_macro")),
        pct(run.values("f1_macro")),
        _epoch_time(run),
        _plain(run.values("samples_per_s", None)),
        _device(run),
        _paper(dataset, variant, paper),
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


def paired_tests(
    merged: dict[tuple[str, str], Run], dataset: str, ref: str = REFERENCE
) -> list[str]:
    """The paired tests of ``ref`` against every other variant of ``dataset``, as markdown."""
    reference = merged.get((dataset, ref))
    others = [v for (d, v) in merged if d == dataset and v != ref]
    if not others:
        return []
    # McNemar on the pooled held-out texts where both runs are cells that keep predictions
    ref_predictions = _cell_predictions(reference)
    lines = [
        "",
        f"Paired test of {ref} against each variant on per-fold held-out test "
        f"F1 (Wilcoxon signed-rank with >= {WILCOXON_MIN} common folds, else paired "
        "t-test; two-sided)"
        + (
            "; McNemar's exact test on the pooled held-out texts (right only with "
            f"{ref} / only with the variant):"
            if ref_predictions is not None
            else ":"
        ),
        "",
        f"| {ref} vs | common folds | test | mean ΔF1 (points) | p-value |"
        + (" McNemar p (only / only) |" if ref_predictions is not None else ""),
        "| --- | --- | --- | --- | --- |" + (" --- |" if ref_predictions is not None else ""),
    ]
    for variant in sorted(others, key=_order):
        if reference is None:
            lines.append(f"| {variant} | 0 | n/a ({ref} not run) | | |")
            continue
        t = paired_test(reference, merged[(dataset, variant)])
        delta = f"{100 * t['delta']:+.2f}" if "delta" in t else ""
        p = f"{t['p']:.4g}" if t["p"] is not None else ""
        row = f"| {variant} | {t['n']} | {t['test'] or t['why']} | {delta} | {p} |"
        other_predictions = _cell_predictions(merged[(dataset, variant)])
        if ref_predictions is not None:
            m = (
                pooled_mcnemar(ref_predictions, other_predictions)
                if other_predictions is not None
                else {"p": None, "why": "n/a (no predictions)"}
            )
            m_text = (
                f"{m['p']:.2g} ({m['only_ref']} / {m['only_other']})"
                if m["p"] is not None
                else m["why"]
            )
            row += f" {m_text} |"
        lines.append(row)
    return lines


def _cell_predictions(run: Run | None):
    """A run's held-out predictions where it was read from one cell folder that keeps them."""
    if run is None or len(run.sources) != 1:
        return None
    return read_test_predictions(run.sources[0])


def _samples_and_final(present: dict[str, Run]) -> list[str]:
    """Per run that records them: the held-out test sample's size and source, and the final
    model (its rows, its macro F1 estimate with the interval and where it comes from)."""
    lines = []
    for variant, run in sorted(present.items(), key=lambda item: _order(item[0])):
        if run.held_out:
            h = run.held_out
            predict = (
                f"; predict sample {h['predict_rows']:,} texts"
                if "predict_rows" in h
                else "; no predict sample"
            )
            lines.append(
                f"- {variant}: held-out test sample {h.get('test_rows', 0):,} texts "
                f"({held_out_source(h)}){predict}."
            )
        if run.final and "estimate" in run.final:
            f = run.final
            how = "retrained on" if f.get("enabled") else "a copy of the first fold's model, on"
            lines.append(
                f"- {variant}: final model: {how} {f.get('trained_on', 0):,} labelled rows; "
                f"{headline({'estimate': f['estimate'], 'estimate_source': _source(f)})}."
            )
    return [""] + lines if lines else []


def _source(final: dict) -> str:
    return "the folds" if final["estimate"].get("from_folds") else "its held-out test sample"


def _order(variant: str) -> tuple[int, str]:
    names = list(VARIANTS)
    return (names.index(variant) if variant in names else len(names), variant)


def render(runs: list[Run], paper: PaperTables | None = None, deployed: dict | None = None) -> str:
    """The report as markdown; ``paper``: the paper's numbers (``paper_numbers``) beside
    the runs; ``deployed``: the deployed model's card (``reporting.deployed``), first."""
    sources = sorted({s for run in runs for s in run.sources})
    lines = [
        "# LTTW results",
        "",
        "Generated by `lttw report` from " + ", ".join(f"`{s}`" for s in sources) + ".",
        *deployed_section(deployed),
        "",
        "Macro precision / recall / F1 in % on the held-out test sample: mean ± sample "
        "standard deviation over folds (one fold: no ±). Time per epoch and samples per "
        "second are means over folds and depend on the device; the paper's were measured "
        "on an RTX 4070 Super with BERT-base at batch 128. Paper P / R / F1: Table 4 "
        "(LTTW, BERT, BERT-CNN) and Table 5 (the ablations; all times per epoch). "
        "`encoder` is the paper's BERT row with the encoder in `model.encoder`. " + TIME_NOTE,
    ]
    return "\n".join(lines + dataset_tables(runs, paper=paper)) + "\n"


#: the paper's two tables of a grid with the paper's numbers: a title, and whether a report
#: row (a variant, or ``variant [cell]`` for another setting of it) belongs to it
ABLATIONS = ("LTTW-M", "LTTW-L", "LTTW-Att")
PAPER_TABLES: list[tuple[str, Callable[[str], bool]]] = [
    ("Table 4: LTTW against the baselines", lambda v: v.split(" [")[0] not in ABLATIONS),
    ("Table 5: the ablations", lambda v: v in (REFERENCE, *ABLATIONS)),
]
TIME_NOTE = (
    "Time per epoch in s without the first step's start-up (compilation, CUDA context, "
    "allocator warm-up; in brackets, + that start-up); * where a run did not measure the "
    "start-up apart and its time includes it. The device column names the card and how many "
    "cells trained on it at once."
)


def dataset_tables(
    runs: list[Run],
    level: str = "##",
    paper: PaperTables | None = None,
    reference: str = REFERENCE,
    tables: list[tuple[str, Callable[[str], bool]]] | None = None,
) -> list[str]:
    """A table per dataset (its variants next to the ``paper``'s numbers, then the paired
    tests of ``reference`` against the others), the paper's datasets first; ``level``: the
    headings' markdown level; ``tables``: several tables per dataset instead (a title and
    which rows, e.g. ``PAPER_TABLES``), each with its own paired tests."""
    paper = paper or {}
    merged = merge_runs(runs)
    ran = {d for d, _ in merged}
    datasets = [d for d in dict.fromkeys([*paper, *sorted(ran)]) if d in ran]
    lines: list[str] = ["", TIME_NOTE] if tables else []
    for dataset in datasets:
        present = {v: r for (d, v), r in merged.items() if d == dataset}
        lines += ["", f"{level} {DATASET_NAMES.get(dataset, dataset)}"]
        for title, keep in tables or [("", lambda v: True)]:
            rows = {v: r for v, r in present.items() if keep(v)}
            shown = {(d, v): r for (d, v), r in merged.items() if d != dataset or keep(v)}
            lines += ["", f"{title}:", ""] if title else [""]
            lines += [
                "| variant | folds | P | R | F1 | time/epoch (s) | samples/s | device | "
                "paper P / R / F1 |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for variant in sorted({v for v in VARIANTS if keep(v)} | set(rows), key=_order):
                lines.append(_row(dataset, variant, rows.get(variant), paper))
            lines += paired_tests(shown, dataset, reference)
        lines += _samples_and_final(present)
    return lines
