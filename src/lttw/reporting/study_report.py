"""The paired study in ``lttw report``: one table of dataset x variant (held-out macro F1 mean ±
std over folds, the gap to the reference variant with a paired t-test across folds and
McNemar's exact test on the pooled held-out predictions), one verdict per dataset, and the
learning curve (a table, ``learning_curve.csv``, and a PNG for ``dvc plots`` and docs/evidence/results.md).

Everything is read from the cells in ``evidence/runs`` (``experiments.cells``); cells not collected
yet are listed as not run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from lttw.experiments.cell_folder import Run, read_cell, read_test_predictions
from lttw.experiments.cells import RUNS_DIR
from lttw.experiments.study import Cell, Study, read_study, train_share
from lttw.io import read_yaml
from lttw.reporting.deployed import DEPLOYED_TITLE
from lttw.reporting.report import DATASET_NAMES
from lttw.reporting.stats import paired_test, pct, pooled_mcnemar
from lttw.reporting.study_curve import write_curve

SIGNIFICANT = 0.05


@dataclass
class CellResult:
    cell: Cell
    run: Run
    predictions: pd.DataFrame  # fold, row, label, pred (held-out test)
    train_texts: int

    def f1(self) -> np.ndarray:
        return self.run.values("f1_macro")


def load_results(study: Study, runs_dir: str | Path, n_folds: int = 10) -> dict[str, CellResult]:
    """The collected cells of ``study`` by name (``n_folds``: as for ``Study.cells``)."""
    out = {}
    for cell in study.cells(n_folds):
        folder = Path(runs_dir) / cell.name
        if not (folder / "summary.json").is_file():
            continue
        run = read_cell(folder)
        params = read_yaml(folder / "params.yaml") or {}
        size = (params.get("data") or {}).get("train_size", 0)
        share = train_share((params.get("folds") or {}).get("n_folds", n_folds))
        out[cell.name] = CellResult(
            cell,
            run,
            read_test_predictions(folder),
            cell.train_texts or round(share * size),
        )
    return out


def _p(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


def _paired(result: CellResult, reference: CellResult) -> tuple[dict, dict]:
    """``result`` against ``reference``: the paired test across folds (delta = result -
    reference) and McNemar's exact test on the pooled held-out predictions."""
    return (
        paired_test(result.run, reference.run),
        pooled_mcnemar(reference.predictions, result.predictions),
    )


def _delta(t: dict, missing: str = "") -> str:
    return f"{100 * t['delta']:+.2f}" if "delta" in t else missing


def _gap(result: CellResult, reference: CellResult, t: dict) -> float | None:
    """Mean held-out F1 gap in points, ``result`` minus ``reference``, over their common folds:
    the paired test's, or with one common fold (no test) that fold's; None without one."""
    if "delta" in t:
        return 100 * t["delta"]
    ours, theirs = _common_f1(result, reference)
    return 100 * float(np.mean(ours - theirs)) if ours.size else None


def _common_f1(result: CellResult, reference: CellResult) -> tuple[np.ndarray, np.ndarray]:
    """Held-out test macro F1 of ``result`` and ``reference`` on their common folds, paired."""
    common = sorted(set(result.run.folds) & set(reference.run.folds))
    f1 = lambda cell: np.array([cell.run.folds[f]["test"]["f1_macro"] for f in common])  # noqa: E731
    return f1(result), f1(reference)


def _comparison(result: CellResult, reference: CellResult | None) -> list[str]:
    if result is reference:
        return ["reference", "", "", ""]
    if reference is None:
        return ["n/a (reference not run)", "", "", ""]
    t, m = _paired(result, reference)
    gap = _gap(result, reference, t)
    delta = "" if gap is None else f"{gap:+.2f}"
    wins = ""
    if t["n"]:
        ours, theirs = _common_f1(result, reference)
        wins = f"{int((ours > theirs).sum())}/{ours.size}"
    exact = (
        f"{_p(m['p'])} ({m['only_other']} / {m['only_ref']})" if m["p"] is not None else m["why"]
    )
    return [delta, wins, _p(t["p"]) or (t["why"] or ""), exact]


def _verdict(dataset: str, study: Study, results: dict[str, CellResult]) -> str:
    name = DATASET_NAMES.get(dataset, dataset)
    lttw, ref = results.get(f"ev-{dataset}-lttw"), results.get(f"ev-{dataset}-{study.reference}")
    if lttw is None or ref is None:
        return f"- {name}: not run yet."
    t, m = _paired(lttw, ref)
    gap = _gap(lttw, ref, t)
    if gap is None:
        return f"- {name}: LTTW and `{study.reference}` share no fold yet."
    return _gap_sentence(name, study, t, m, gap) + _ahead_of_both(dataset, study, results)


def _ahead_of_both(dataset: str, study: Study, results: dict[str, CellResult]) -> str:
    """Where another collected variant of the dataset is ahead of LTTW and the reference, by
    mean F1 and by McNemar's exact test (p < 0.05) against the better of the two: say so (the
    factors may help the encoder and still lose to a simpler model). A lead within noise is
    left to the table."""
    mean = {
        variant: float(results[f"ev-{dataset}-{variant}"].f1().mean())
        for variant in study.variants
        if f"ev-{dataset}-{variant}" in results
    }
    score = cast(Callable[[str], float], mean.get)  # of variants in ``mean``
    runner_up = max(("lttw", study.reference), key=score)
    best = max((v for v in mean if v not in ("lttw", study.reference)), key=score, default=None)
    if best is None or mean[best] <= mean[runner_up]:
        return ""
    m = pooled_mcnemar(
        results[f"ev-{dataset}-{runner_up}"].predictions,
        results[f"ev-{dataset}-{best}"].predictions,
    )
    if m["p"] is None or m["p"] >= 0.05:
        return ""
    return (
        f" `{best}` is ahead of both ({100 * mean[best]:.2f} against "
        f"{100 * mean[runner_up]:.2f}; McNemar p {_p(m['p'])} against `{runner_up}`)."
    )


def _folds(n: int) -> str:
    return f"{n} fold" if n == 1 else f"{n} folds"


def _gap_sentence(name: str, study: Study, t: dict, m: dict, gap: float) -> str:
    tests = f"paired t-test p {_p(t['p']) or 'n/a'}, McNemar p {_p(m['p']) or 'n/a'}"
    strong = all(p is not None and p < SIGNIFICANT for p in (t["p"], m["p"]))
    if strong:
        word = "ahead of" if gap > 0 else "behind"
        return (
            f"- {name}: LTTW is {word} `{study.reference}` by {abs(gap):.2f} points "
            f"over {_folds(t['n'])} ({tests})."
        )
    either = any(p is not None and p < SIGNIFICANT for p in (t["p"], m["p"]))
    hedge = "only one of the two tests finds" if either else "neither test finds"
    return (
        f"- {name}: LTTW {gap:+.2f} points against `{study.reference}` over "
        f"{_folds(t['n'])}; {hedge} a difference at {SIGNIFICANT} ({tests})."
    )


def study_table(study: Study, results: dict[str, CellResult]) -> list[str]:
    lines = [
        "| dataset | variant | folds | held-out macro F1 (%) | Δ vs "
        f"{study.reference} (points) | folds ahead | paired t-test p | McNemar exact p "
        "(only this right / only the reference right) | training s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for dataset in study.datasets:
        reference = results.get(f"ev-{dataset}-{study.reference}")
        for variant in study.variants:
            name = f"ev-{dataset}-{variant}"
            label = f"| {DATASET_NAMES.get(dataset, dataset)} | {variant} |"
            result = results.get(name)
            if result is None:
                lines.append(f"{label} not run | | | | | | |")
                continue
            seconds = result.run.values("time_per_epoch_s", None) * result.run.values(
                "epochs_run", None
            )
            cells = [
                str(len(result.run.folds)),
                pct(result.f1()),
                *_comparison(result, reference),
                f"{seconds.sum():.0f}",
            ]
            lines.append(f"{label} " + " | ".join(cells) + " |")
    return lines


def learning_curve(study: Study, results: dict[str, CellResult]) -> pd.DataFrame:
    """train_texts x variant: mean held-out macro F1 (NaN where not run)."""
    rows: dict[int | None, dict[str, float]] = {}
    for result in results.values():
        cell = result.cell
        if cell.dataset != study.curve_dataset or cell.variant not in study.curve_variants:
            continue
        rows.setdefault(result.train_texts, {})[cell.variant] = float(result.f1().mean())
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=study.curve_variants)
    return frame.sort_index().rename_axis("train_texts")


def _curve_gap(study: Study, results: dict[str, CellResult], texts: int) -> list[str]:
    """The learning curve's lttw against the reference at one size: the mean paired gap and
    McNemar's exact p on the pooled held-out predictions ("" where either is not run)."""
    at = {
        r.cell.variant: r
        for r in results.values()
        if r.cell.dataset == study.curve_dataset and r.train_texts == texts
    }
    if "lttw" not in at or study.reference not in at:
        return ["", ""]
    t, m = _paired(at["lttw"], at[study.reference])
    return [_delta(t, "n/a"), _p(m["p"]) or m["why"]]


def render_study(study: Study, results: dict[str, CellResult]) -> list[str]:
    n_cells = len(study.cells())
    lines = [
        "## Where the latent factors help (the paired study)",
        "",
        f"{len(results)} of {n_cells} cells of `experiments/study.yaml` collected "
        f"(folds {study.folds}; every cell of a dataset on the same samples and folds). "
        f"Held-out test macro F1: mean ± sample std over folds. Δ: mean paired gap to "
        f"`{study.reference}`; the paired t-test runs across folds, McNemar's exact test "
        "on the held-out predictions pooled over folds. Training s: summed over folds.",
        "",
        *study_table(study, results),
        "",
        "Verdict per dataset:",
        "",
    ]
    lines += [_verdict(d, study, results) for d in study.datasets]
    curve = learning_curve(study, results)
    if study.curve_dataset:
        name = DATASET_NAMES.get(study.curve_dataset, study.curve_dataset)
        paired = "lttw" in study.curve_variants and study.reference in study.curve_variants
        extra = [f"Δ lttw vs {study.reference} (points)", "McNemar exact p"] if paired else []
        lines += [
            "",
            f"Learning curve ({name}, held-out macro F1 %, mean over folds; "
            "`dvc plots show evidence/learning_curve.png`):",
            "",
            "| training texts | " + " | ".join([*study.curve_variants, *extra]) + " |",
            "| --- |" + " --- |" * (len(study.curve_variants) + len(extra)),
        ]
        for texts, row in curve.iterrows():
            values = [f"{100 * v:.2f}" if v == v else "not run" for v in row]
            if paired:
                values += _curve_gap(study, results, texts)
            lines.append(f"| {texts:,} | " + " | ".join(values) + " |")
    missing = [c.name for c in study.cells() if c.name not in results]
    if missing:
        lines += ["", "Not run yet: " + ", ".join(f"`{m}`" for m in missing) + "."]
    return lines


README_START, README_END = "<!-- study:start -->", "<!-- study:end -->"


def fill_readme(readme: str, study_file: Path, runs_dir: Path = RUNS_DIR) -> str:
    """``readme`` with the study's table, verdicts and learning curve (``render_study`` without
    its heading) between the ``<!-- study:start -->`` / ``<!-- study:end -->`` markers;
    the cells read from ``runs_dir``."""
    from lttw.errors import UserError

    head, start, rest = readme.partition(README_START)
    _, end, tail = rest.partition(README_END)
    if not (start and end):
        raise UserError(f"the page has no {README_START} ... {README_END} block")
    study = read_study(study_file)
    body = render_study(study, load_results(study, runs_dir))[2:]
    return head + start + "\n" + "\n".join(body) + "\n" + end + tail


def with_study(report: str, study_file: Path, runs_dir: Path = RUNS_DIR) -> tuple[str, list[Path]]:
    """The report with the study's section after its title and introduction, and after the
    deployed model's section where it leads (the cells read from ``runs_dir``), and the
    learning-curve files written beside ``runs_dir``."""
    study = read_study(study_file)
    results = load_results(study, runs_dir)
    written = []
    if study.curve_dataset and results:
        written = write_curve(learning_curve(study, results), Path(runs_dir).parent)
    at = report.find("\n## ")
    if report.startswith(DEPLOYED_TITLE, at + 1):  # the deployed model stays first
        at = report.find("\n## ", at + 1)
    at = len(report) if at < 0 else at
    head, rest = report[:at], report[at:]
    return head + "\n" + "\n".join(render_study(study, results)) + "\n" + rest, written
