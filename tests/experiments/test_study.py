"""Issue 27: the paired study (experiments/study.yaml): its cells as queued DVC experiments, the
collected cells' folders, and `lttw report`'s table, verdicts and learning curve."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import binomtest, ttest_rel
from support.tiny_project import REPO

from lttw.errors import UserError
from lttw.experiments import collect as study_collect
from lttw.experiments.dvc_queue import queue_command
from lttw.experiments.grids import load_grid
from lttw.experiments.study import collected, read_study
from lttw.io import write_json, write_parquet
from lttw.reporting.stats import pooled_mcnemar
from lttw.reporting.study_report import (
    fill_readme,
    learning_curve,
    load_results,
    with_study,
)
from lttw.settings import settings_from_dict

REPORT = "# LTTW results\n\nintro\n\n## AG News\n\n| a table |\n"


def assignments(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "-S"]
    return dict(p.split("=", 1) for p in pairs)


def test_the_study_file_names_valid_cells_queued_on_absolute_data():
    study_path = REPO / "experiments" / "study.yaml"
    study = read_study(study_path)
    cells = study.cells()
    names = [c.name for c in cells]
    assert (
        len(names)
        == len(set(names))
        == len(study.datasets) * len(study.variants)
        + len(study.curve_texts) * len(study.curve_variants)
    )
    assert names[:4] == [
        "ev-ag_news-lttw",
        "ev-ag_news-lttw-m",
        "ev-ag_news-encoder",
        "ev-ag_news-tfidf_linear",
    ]  # the most important comparison first
    curve = {c.name: c for c in cells}["ev-ag_news-n500-lttw"]
    assert curve.train_texts == 500 and curve.params["data.train_size"] == 625  # 8:1:1
    for cell in cells:  # every assignment is a valid parameter, as dvc writes it
        grid_cell = next(c for c in load_grid(study_path).cells if c.name == cell.name)
        command = queue_command(grid_cell, "/abs/datasets")
        assert command[command.index("-n") + 1] == cell.name
        raw: dict = {}
        for dotted, value in assignments(command).items():
            group, key = dotted.split(".")
            raw.setdefault(group, {})[key] = yaml.safe_load(value)
        settings = settings_from_dict(raw)
        assert settings.folds.run == study.folds and settings.data.root == "/abs/datasets"
        assert settings.data.dataset == cell.dataset
    yahoo = {c.name: c for c in cells}["ev-yahoo_answers-lttw-m"].params
    assert yahoo["model.fusion"] == "none" and yahoo["data.sampling"] == "stratified"


@pytest.mark.parametrize(
    "text, message",
    [
        ("folds: [0, 1\n", "not YAML"),
        ("- a list\n", "a mapping"),
        ("folds: [0]\ndatasets: {ag_news: {}}\nvariants: {lttw: {}}\n", "reference 'encoder'"),
        ("folds: [-1]\ndatasets: {a: {}}\nvariants: {encoder: {}}\n", "folds must be"),
        (
            "datasets: {a: {}}\nvariants: {encoder: {}}\nlearning_curve: {variants: [x]}\n",
            "learning_curve.variants ['x']",
        ),
        ("datasets: [a]\nvariants: {encoder: {}}\n", "datasets must be a mapping"),
    ],
)
def test_a_bad_study_file_is_one_clear_error(tmp_path, text, message):
    path = tmp_path / "study.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=str(path)) as err:
        read_study(path)
    assert message in str(err.value)


F1 = {"lttw": [0.91, 0.92, 0.90], "encoder": [0.89, 0.905, 0.90]}


def write_cell(runs, name, dataset, variant, f1, preds, train_size=5000):
    folder = runs / name
    write_json(
        folder / "summary.json",
        {"folds": list(range(len(f1)))},
    )
    for fold, value in enumerate(f1):
        write_json(
            folder / "folds" / f"fold_{fold}.json",
            {
                "fold": fold,
                "dataset": dataset,
                "variant": variant,
                "time_per_epoch_s": 10.0,
                "epochs_run": 2,
                "test": {"f1_macro": value, "precision_macro": value, "recall_macro": value},
            },
        )
    (folder / "params.yaml").write_text(
        yaml.safe_dump(
            {
                "data": {"dataset": dataset, "train_size": train_size},
                "folds": {"n_folds": 10},
                "model": {"variant": variant, "fusion": "concat", "attention": "linformer"},
            }
        )
    )
    write_parquet(folder / "test_predictions.parquet", preds)


def predictions(labels: np.ndarray, wrong: list[int]) -> pd.DataFrame:
    frames = []
    for fold in range(3):
        pred = labels.copy()
        pred[wrong] = (pred[wrong] + 1) % 4
        frames.append(
            pd.DataFrame(
                {"fold": fold, "row": np.arange(len(labels)), "label": labels, "pred": pred}
            )
        )
    return pd.concat(frames, ignore_index=True)


def test_the_report_opens_with_the_study_table_tests_and_curve(tmp_path):
    study_file = tmp_path / "study.yaml"
    study_file.write_text(
        "folds: [0, 1, 2]\ndatasets: {ag_news: {}, sst2: {}}\n"
        "variants: {lttw: {}, encoder: {model.variant: encoder}, "
        "tfidf_linear: {model.variant: tfidf_linear}}\n"
        "learning_curve: {dataset: ag_news, variants: [lttw, encoder], "
        "train_texts: [500]}\n"
    )
    runs = tmp_path / "runs"
    labels = np.arange(40) % 4
    lttw_preds, enc_preds = predictions(labels, [0, 1]), predictions(labels, [1, 2, 3, 4, 5])
    write_cell(runs, "ev-ag_news-lttw", "ag_news", "lttw", F1["lttw"], lttw_preds)
    write_cell(runs, "ev-ag_news-encoder", "ag_news", "encoder", F1["encoder"], enc_preds)
    write_cell(
        runs,
        "ev-ag_news-n500-lttw",
        "ag_news",
        "lttw",
        [0.80, 0.82, 0.81],
        lttw_preds,
        train_size=625,
    )
    write_cell(
        runs,
        "ev-ag_news-tfidf_linear",
        "ag_news",
        "tfidf_linear",
        [0.95, 0.95, 0.95],
        predictions(labels, []),
    )  # right where lttw is wrong: rows 0, 1 of 3 folds
    assert collected(runs) == {
        "ev-ag_news-lttw",
        "ev-ag_news-encoder",
        "ev-ag_news-n500-lttw",
        "ev-ag_news-tfidf_linear",
    }

    text, written = with_study(REPORT, study_file, runs)
    assert text.startswith("# LTTW results\n\nintro\n\n## Where the latent factors help")
    assert text.index("## Where") < text.index("## AG News")
    rows = {
        tuple(cell.strip() for cell in line.split("|")[1:3]): line
        for line in text.splitlines()
        if line.startswith("| AG News") or line.startswith("| SST-2")
    }
    t = ttest_rel(F1["lttw"], F1["encoder"])
    # per fold: lttw wrong on rows 0, 1, the encoder on 1..5: only lttw right on 2..5, only
    # the encoder on 0, in each of 3 folds
    p = binomtest(3, 15, 0.5).pvalue
    assert (
        f"| 3 | 91.00 ± 1.00 | +1.17 | 2/3 | {t.pvalue:.3g} | {p:.3g} (12 / 3) |"
        in rows[("AG News", "lttw")]
    )
    assert rows[("AG News", "encoder")].endswith("| 89.83 ± 0.76 | reference |  |  |  | 60 |")
    assert "| 60 |" in rows[("AG News", "lttw")]  # training s: 3 folds x 2 epochs x 10 s
    assert "not run" in rows[("SST-2", "lttw")]
    assert "- SST-2: not run yet." in text
    assert (
        "- AG News: LTTW +1.17 points against `encoder` over 3 folds; only one of the two "
        "tests finds a difference" in text
    )
    p_best = binomtest(0, 6, 0.5).pvalue
    assert (
        f"`tfidf_linear` is ahead of both (95.00 against 91.00; McNemar p {p_best:.3g} "
        "against `lttw`)." in text
    )
    assert (
        "Not run yet: `ev-sst2-lttw`, `ev-sst2-encoder`, `ev-sst2-tfidf_linear`, "
        "`ev-ag_news-n500-encoder`." in text
    )
    assert (
        "| training texts | lttw | encoder | Δ lttw vs encoder (points) | McNemar exact p |" in text
    )
    assert "| 500 | 81.00 | not run |  |  |" in text
    assert f"| 4,000 | 91.00 | 89.83 | +1.17 | {p:.3g} |" in text
    curve = pd.read_csv(tmp_path / "learning_curve.csv")
    assert curve["train_texts"].tolist() == [500, 4000]
    assert curve["lttw"].round(4).tolist() == [0.81, 0.91]
    assert written == [tmp_path / "learning_curve.csv", tmp_path / "learning_curve.png"]
    assert (tmp_path / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_lead_within_noise_is_left_to_the_table(tmp_path):
    study_file = tmp_path / "study.yaml"
    study_file.write_text(
        "folds: [0, 1, 2]\ndatasets: {ag_news: {}}\n"
        "variants: {lttw: {}, encoder: {model.variant: encoder}, "
        "tfidf_linear: {model.variant: tfidf_linear}}\n"
    )
    runs = tmp_path / "runs"
    labels = np.arange(40) % 4
    lttw_preds = predictions(labels, [0, 1])
    write_cell(runs, "ev-ag_news-lttw", "ag_news", "lttw", F1["lttw"], lttw_preds)
    write_cell(
        runs,
        "ev-ag_news-encoder",
        "ag_news",
        "encoder",
        F1["encoder"],
        predictions(labels, [1, 2, 3, 4, 5]),
    )
    # a higher mean F1 than lttw's, on one text a fold: McNemar p 0.25 against lttw
    write_cell(
        runs,
        "ev-ag_news-tfidf_linear",
        "ag_news",
        "tfidf_linear",
        [0.95, 0.95, 0.95],
        predictions(labels, [0]),
    )
    text, _ = with_study(REPORT, study_file, runs)
    assert "- AG News: LTTW +1.17 points" in text and "ahead of both" not in text


def test_one_common_fold_gives_its_gap_and_no_paired_test(tmp_path):
    """With one fold the paired t-test is n/a, but the gap is that fold's (not +0.00)."""
    study_file = tmp_path / "study.yaml"
    study_file.write_text(
        "folds: [0]\ndatasets: {ag_news: {}}\n"
        "variants: {lttw: {}, encoder: {model.variant: encoder}}\n"
    )
    runs = tmp_path / "runs"
    labels = np.arange(40) % 4
    write_cell(runs, "ev-ag_news-lttw", "ag_news", "lttw", [0.80], predictions(labels, [0, 1]))
    write_cell(runs, "ev-ag_news-encoder", "ag_news", "encoder", [0.90], predictions(labels, []))
    text, _ = with_study(REPORT, study_file, runs)
    row = next(line for line in text.splitlines() if line.startswith("| AG News | lttw |"))
    assert "| 1 | 80.00 | -10.00 | 0/1 | n/a (needs >= 2 common folds) |" in row
    assert "- AG News: LTTW -10.00 points against `encoder` over 1 fold; " in text


def test_mcnemar_pairs_rows_of_the_same_fold_only():
    labels = np.arange(8) % 2
    a, b = predictions(labels, []), predictions(labels, [0])
    result = pooled_mcnemar(a, b)  # only the reference (a) right: row 0 of each fold
    assert (result["only_ref"], result["only_other"]) == (3, 0)
    assert result["p"] == pytest.approx(binomtest(3, 3, 0.5).pvalue)
    assert pooled_mcnemar(a, b[b["fold"] == 9])["why"] == "n/a (no common held-out texts)"


def test_collect_keeps_the_newest_run_of_a_cell_and_skips_what_it_has(tmp_path, monkeypatch):
    def exp(rev, when, f1):
        metrics = {
            "metrics/summary.json": {
                "data": {"dataset": "ag_news", "variant": "lttw", "folds": [0]}
            },
            "metrics/folds/fold_0.json": {
                "data": {
                    "fold": 0,
                    "test": {"f1_macro": f1},
                    "time_per_epoch_s": 5.0,
                    "epochs_run": 3,
                }
            },
            "metrics/folds/fold_1.json": {"data": {"fold": 1}},
        }  # not in the summary
        return {
            "rev": rev,
            "name": "ev-ag_news-lttw",
            "data": {
                "timestamp": when,
                "metrics": metrics,
                "params": {"params.yaml": {"data": {"seed": 1}}},
            },
        }

    doc = [
        {
            "rev": "base",
            "data": {},
            "experiments": [
                {"revs": [exp("a" * 40, "2026-11-24T01:00:00", 0.5)]},
                {"revs": [exp("b" * 40, "2026-11-24T02:00:00", 0.9)]},
                {
                    "executor": {"state": "queued"},
                    "revs": [exp("c" * 40, "2026-11-24T03:00:00", 0.1)],
                },
                {"revs": [{**exp("d" * 40, "2026-11-24T04:00:00", 0.2), "name": "other"}]},
            ],
        }
    ]
    seen = []

    def fake_predictions(run, fold):
        seen.append((run.rev, fold))
        return np.array([0, 1]), np.array([0, 0])

    monkeypatch.setattr(study_collect, "dvc_predictions", fake_predictions)
    names = {"ev-ag_news-lttw"}
    assert study_collect.collect(doc, names, tmp_path) == ["ev-ag_news-lttw"]
    folder = tmp_path / "ev-ag_news-lttw"
    assert seen == [("b" * 40, 0)]
    assert sorted(p.name for p in (folder / "folds").iterdir()) == ["fold_0.json"]
    cell = yaml.safe_load((folder / "cell.json").read_text())
    assert cell["rev"] == "b" * 40 and cell["train_s"] == 15.0
    assert pd.read_parquet(folder / "test_predictions.parquet")["pred"].tolist() == [0, 0]
    assert study_collect.collect(doc, names, tmp_path) == []  # this run is there already

    monkeypatch.setattr(study_collect, "dvc_predictions", lambda run, fold: None)
    shutil.rmtree(folder)
    with pytest.raises(UserError, match="fold 0 are not in DVC's cache"):
        study_collect.collect(doc, names, tmp_path)
    assert not folder.exists()  # nothing half-written


@pytest.mark.slow
def test_cells_run_through_the_queue_are_collected_and_reported(queued_grids, tiny_repro):
    """The study's two cells (``support.queued_grids``): queued, run by the queue (with the
    sweep's cell), collected."""
    project = queued_grids.root
    assert "queued 2 cell(s)" in queued_grids.study_queued
    again = queued_grids.study_queued_again
    assert "skipped (collected, queued or run before): ev-ag_news-lttw, ev-ag_news-frozen" in again
    assert "queued 0 cell(s)" in again  # not twice
    status = queued_grids.study_status_queued
    assert status.count("queued or finished (lttw exp collect)") == 2
    # one run of the queue: the study's two cells and the sweep's (test_sweeps). Every stage
    # of `lttw` is the commit's, cached; `frozen` is Table 7's k10s10 frozen setting, and of
    # it and the sweep's cell one has every stage restored from the run cache of the other's
    # experiment, encoder states included
    from support.queued_grids import experiment_logs, ran_and_restored
    from support.tiny_project import ran

    logs = experiment_logs(queued_grids.queue_run)
    assert set(logs) == {"ev-ag_news-lttw", "ev-ag_news-frozen", "table7-k10s10-frozen"}
    assert not ran(logs["ev-ag_news-lttw"]), logs["ev-ag_news-lttw"][-3000:]
    _, restored = ran_and_restored(logs, "table7-k10s10-frozen", "ev-ag_news-frozen")
    assert "Stage 'encode' is cached - skipping run" in logs[restored]
    out = queued_grids.study_collected
    assert "collected 2 cell(s): ev-ag_news-frozen, ev-ag_news-lttw" in out
    assert queued_grids.study_status_collected.count("collected") == 2
    results = load_results(
        read_study(project / "experiments" / "study.yaml"), project / "evidence" / "runs"
    )
    cell = results["ev-ag_news-lttw"]
    committed = yaml.safe_load((tiny_repro.root / "metrics/folds/fold_0.json").read_text())
    assert cell.f1()[0] == committed["test"]["f1_macro"]  # the same run: from DVC's cache
    assert len(cell.predictions) == committed["test"]["n"]
    text = queued_grids.report.read_text()
    assert "2 of 2 cells of `experiments/study.yaml` collected" in text
    # McNemar's exact test on the two cells' held-out predictions: p (discordant counts)
    row = next(line for line in text.splitlines() if line.startswith("| AG News | lttw |"))
    assert re.search(r"\| [\d.]+ \(\d+ / \d+\) \|", row), row
    assert learning_curve(read_study(project / "experiments" / "study.yaml"), results).empty


def test_the_readme_shows_the_collected_study():
    """docs/evidence/results.md's study block is what
    `lttw exp report --readme docs/evidence/results.md`
    renders from the committed evidence/runs: rerun it after collecting cells."""
    readme = (REPO / "docs" / "evidence" / "results.md").read_text(encoding="utf-8")
    assert (
        fill_readme(readme, REPO / "experiments" / "study.yaml", REPO / "evidence" / "runs")
        == readme
    )
    with pytest.raises(UserError, match="no <!-- study:start -->"):
        fill_readme("# no block", REPO / "experiments" / "study.yaml")
