"""``lttw exp compare``: the DVC experiments (``dvc exp show --json``: the workspace, the
baseline commits and their experiments) as one table of the columns people read, in 100
characters: the deployed model's rows, macro F1 with its interval and where it comes from,
its calibration error, and the folds' held-out test macro F1 (the study), from each row's
``metrics/summary.json``; ``params``: more columns, one per parameter named."""

from __future__ import annotations

from lttw.experiments.dvc_experiments import SUMMARY, exp_rows, experiment_name, file_data

#: the widest a table is (the experiment's name is cut to fit)
WIDTH = 100
NAME_WIDTH = 22


def _param(params: dict, dotted: str) -> str:
    value: object = params
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return "-" if value is None else str(value)


def _pct(value) -> str:
    return f"{100 * value:.1f}" if isinstance(value, (int, float)) else "-"


def _block(doc: dict, key: str) -> dict:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def compare_rows(doc: list, params: tuple[str, ...] = ()) -> list[list[str]]:
    """One row of cells per experiment (and commit) of ``doc`` that has a summary."""
    out = []
    for _kind, row, data in exp_rows(doc):
        summary = file_data((data or {}).get("metrics"), SUMMARY)
        if summary is None:
            continue
        final = _block(summary, "final")
        estimate = _block(final, "estimate")
        study = summary.get("test/f1_macro") or {}
        interval = (
            f"{_pct(estimate.get('f1_macro_low'))}-{_pct(estimate.get('f1_macro_high'))}"
            if estimate
            else "-"
        )
        ece = estimate.get("ece")
        source = "-" if not estimate else "folds" if estimate.get("from_folds") else "test"
        rows = final.get("trained_on")
        all_params = file_data((data or {}).get("params"), "params.yaml") or {}
        out.append(
            [
                experiment_name(row)[:NAME_WIDTH],
                _param(all_params, "model.variant"),
                f"{rows:,}" if isinstance(rows, int) else "-",
                _pct(estimate.get("f1_macro")),
                interval,
                source,
                _pct(study.get("mean")) if isinstance(study, dict) else "-",
                f"{ece:.3f}" if isinstance(ece, float) else "-",
                *(_param(all_params, name) for name in params),
            ]
        )
    return out


HEADER = ["experiment", "variant", "rows", "F1 %", "95% interval", "from", "folds F1 %", "ECE"]


def render_table(rows: list[list[str]], params: tuple[str, ...] = ()) -> str:
    """The rows as a plain table: a header, then one line each, columns padded."""
    table = [HEADER + list(params), *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in table]
    return "\n".join(line.rstrip()[:WIDTH] for line in lines)
