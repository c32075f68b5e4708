"""`lttw report`: markdown from metrics files written here (no pipeline run needed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import ttest_rel, wilcoxon
from typer.testing import CliRunner

from lttw.cli import app
from lttw.experiments.cell_folder import read_cell, variant_label
from lttw.reporting import report
from lttw.reporting.runs import merge_runs


def write_run(
    folder: Path,
    variant: str,
    f1: dict[int, float],
    dataset: str = "ag_news",
    model: dict | None = None,
    extra_folds: dict[int, float] | None = None,
) -> Path:
    """A run folder as the summary / evaluate stages write it; ``extra_folds`` are stale
    fold files that the summary does not list."""
    for fold, value in {**f1, **(extra_folds or {})}.items():
        part = {
            "precision_macro": value + 0.01,
            "recall_macro": value - 0.01,
            "f1_macro": value,
            "accuracy": value,
            "n": 400,
        }
        metrics = {
            "fold": fold,
            "variant": variant,
            "seed": 42,
            "fold_test": part,
            "test": part,
            "predict": part,
            "time_per_epoch_s": 10.0 + fold,
            "samples_per_s": 100.0,
            "epochs_run": 2,
            "device": "cpu",
        }
        (folder / "folds").mkdir(parents=True, exist_ok=True)
        (folder / "folds" / f"fold_{fold}.json").write_text(json.dumps(metrics))
    (folder / "summary.json").write_text(json.dumps({"device": "cpu", "folds": sorted(f1)}))
    params = {"data": {"dataset": dataset}, "model": {"variant": variant, **(model or {})}}
    (folder / "params.yaml").write_text(yaml.safe_dump(params))
    return folder


def invoke(tmp_path: Path, monkeypatch, *args: str, experiments: bool = False):
    grids = tmp_path / "experiments"  # the paper's numbers: experiments/paper.yaml's `paper`
    grids.mkdir(exist_ok=True)
    shutil.copy2(Path(__file__).resolve().parents[2] / "experiments" / "paper.yaml", grids)
    monkeypatch.chdir(tmp_path)
    flag = [] if experiments else ["--no-experiments"]
    result = CliRunner().invoke(app, ["report", "--out", "report.md", *flag, *args])
    return result, (tmp_path / "report.md").read_text() if result.exit_code == 0 else ""


def row(text: str, variant: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {variant} "))


LTTW = {f: 0.90 + 0.01 * f for f in range(8)}
ENCODER = {f: 0.88 + 0.005 * f + 0.002 * (f % 3) for f in range(8)}


def test_two_variants_eight_folds_wilcoxon(tmp_path, monkeypatch):
    a = write_run(tmp_path / "a", "lttw", LTTW)
    b = write_run(tmp_path / "b", "encoder", ENCODER)
    result, text = invoke(tmp_path, monkeypatch, "--runs", str(a), "--runs", str(b))
    assert result.exit_code == 0, result.output
    f1 = np.array(list(LTTW.values()))
    precision = f"| 8 | {100 * (f1.mean() + 0.01):.2f} ± {100 * f1.std(ddof=1):.2f} |"
    assert precision in row(text, "LTTW")
    assert "93.73 / 93.71 / 93.70" in row(text, "LTTW")  # paper Table 4 beside it
    assert "92.60 / 92.58 / 92.58" in row(text, "encoder")  # paper BERT
    # mean time per epoch (*: start-up not measured apart), samples/s
    assert "| 13.50* | 100.0 | cpu |" in row(text, "LTTW")
    p = wilcoxon(f1, np.array(list(ENCODER.values()))).pvalue
    assert "| encoder | 8 | Wilcoxon signed-rank | " in text and f"{p:.4g} |" in text
    assert "not run" in row(text, "LTTW-M") and "not run" in row(text, "tfidf_linear")
    assert "## AG News" in text and "## SST-2" not in text  # sections only where runs are


def test_few_folds_use_paired_t_test(tmp_path, monkeypatch):
    three = {f: LTTW[f] for f in range(3)}
    a = write_run(tmp_path / "a", "lttw", three)
    b = write_run(tmp_path / "b", "leam", {f: ENCODER[f] for f in range(3)})
    result, text = invoke(tmp_path, monkeypatch, "--runs", str(a), "--runs", str(b))
    assert result.exit_code == 0, result.output
    p = ttest_rel(list(three.values()), [ENCODER[f] for f in range(3)]).pvalue
    assert "| leam | 3 | paired t-test | " in text and f"{p:.4g} |" in text


def test_one_common_fold_is_not_tested(tmp_path, monkeypatch):
    a = write_run(tmp_path / "a", "lttw", {0: 0.9, 1: 0.91})
    b = write_run(tmp_path / "b", "encoder", {1: 0.88, 2: 0.87})
    result, text = invoke(tmp_path, monkeypatch, "--runs", str(a), "--runs", str(b))
    assert result.exit_code == 0, result.output
    assert "| encoder | 1 | n/a (needs >= 2 common folds) |" in text


def test_workspace_metrics_params_labels_and_stale_folds(tmp_path, monkeypatch):
    # the workspace run is LTTW-Att by its params; fold 9 is a stale file the summary omits
    write_run(tmp_path / "metrics", "lttw", {0: 0.9, 1: 0.92}, extra_folds={9: 0.1})
    workspace = {"data": {"dataset": "ag_news"}, "model": {"variant": "lttw", "attention": "mha"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(workspace))
    m = write_run(tmp_path / "m", "lttw", {0: 0.85, 1: 0.86}, model={"fusion": "none"})
    result, text = invoke(tmp_path, monkeypatch, "--runs", str(m))
    assert result.exit_code == 0, result.output
    assert "| 2 | " in row(text, "LTTW-Att") and "| 2 | " in row(text, "LTTW-M")
    assert "not run" in row(text, "LTTW")
    assert "| LTTW-Att | 0 | n/a (LTTW not run) |" in text


def test_runs_of_one_variant_merge_their_folds(tmp_path):
    first = read_cell(write_run(tmp_path / "a", "lttw", {0: 0.9, 1: 0.8}))
    second = read_cell(write_run(tmp_path / "b", "lttw", {1: 0.1, 2: 0.7}))
    merged = merge_runs([first, second])[("ag_news", "LTTW")]
    assert sorted(merged.folds) == [0, 1, 2]
    assert merged.folds[1]["test"]["f1_macro"] == pytest.approx(0.8)  # first one wins


def test_identical_scores_have_no_p_value(tmp_path):
    a = read_cell(write_run(tmp_path / "a", "lttw", LTTW))
    b = read_cell(write_run(tmp_path / "b", "encoder", LTTW))
    assert report.paired_test(a, b)["why"] == "n/a (identical per-fold F1)"


@pytest.mark.parametrize(
    "model,label",
    [
        (None, "LTTW"),
        ({"fusion": "none"}, "LTTW-M"),
        ({"attention": "none"}, "LTTW-L"),
        ({"attention": "mha"}, "LTTW-Att"),
    ],
)
def test_variant_labels(model, label):
    assert variant_label("lttw", model) == label
    assert variant_label("leam", model) == "leam"


def test_no_metrics_is_one_line_error(tmp_path, monkeypatch):
    result, _ = invoke(tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output


# ------------------------------------------------------------------ DVC experiments


def exp_data(
    variant: str, f1: dict[int, float], model: dict | None = None, dataset: str = "ag_news"
) -> dict:
    """One row's `data` as `dvc exp show --json` gives it: metrics and params per file."""
    metrics = {"metrics/summary.json": {"data": {"folds": sorted(f1)}}}
    for fold, value in f1.items():
        part = {"precision_macro": value, "recall_macro": value, "f1_macro": value}
        metrics[f"metrics/folds/fold_{fold}.json"] = {
            "data": {
                "fold": fold,
                "test": part,
                "time_per_epoch_s": 1.0,
                "samples_per_s": 9.0,
                "device": "cpu",
            }
        }
    params = {"data": {"dataset": dataset}, "model": {"variant": variant, "k": 16, **(model or {})}}
    return {"metrics": metrics, "params": {"params.yaml": {"data": params}}}


def exp_show_document() -> list:
    """A recorded `dvc exp show --json`: the workspace (= the last experiment applied), the
    baseline commit (LTTW) and six experiments, one failed (no metrics), one running."""

    def exp(name: str, data: dict) -> dict:
        return {
            "revs": [{"rev": f"{name:0<40}", "name": name, "data": data}],
            "name": name,
            "executor": None,
        }

    m = exp_data("lttw", {0: 0.85}, {"fusion": "none"})
    return [
        {"rev": "workspace", "name": None, "data": m, "error": None, "experiments": None},
        {
            "rev": "a" * 40,
            "name": "main",
            "data": exp_data("lttw", {0: 0.90}),
            "error": None,
            "experiments": [
                exp("lttw-m", m),
                exp("enc", exp_data("encoder", {0: 0.88})),
                exp("k32", exp_data("lttw", {0: 0.91}, {"k": 32})),
                exp("leam-sst2", exp_data("leam", {0: 0.70}, dataset="sst2")),
                exp("broken", {"status": "Failed", "metrics": {}, "params": {}}),
                # still running: dvc shows the workspace's metrics under its name
                {
                    **exp("running", exp_data("encoder", {0: 0.50})),
                    "executor": {"state": "running", "name": "dvc-task", "local": {}},
                },
            ],
        },
    ]


def test_runs_from_a_recorded_exp_show_document():
    from lttw.experiments.dvc_experiments import runs_from_exp_show

    runs = runs_from_exp_show(exp_show_document())
    assert [(r.dataset, r.variant, r.sources[0]) for r in runs] == [
        ("ag_news", "LTTW", "dvc commit main"),
        ("ag_news", "LTTW-M", "dvc exp lttw-m"),
        ("ag_news", "encoder", "dvc exp enc"),
        ("ag_news", "LTTW", "dvc exp k32"),
        ("sst2", "leam", "dvc exp leam-sst2"),
    ]


def test_report_lists_every_experiment(tmp_path, monkeypatch):
    """Issue 17.5: after several `dvc exp run`, every variant that ran has its row; a second
    LTTW run on the same fold is named after its experiment; sections only for datasets
    that have runs; the workspace (the last experiment applied) counts once."""
    from lttw.experiments import dvc_experiments as experiments

    workspace = exp_show_document()[0]["data"]
    for name, entry in workspace["metrics"].items():  # the files dvc read them from
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(json.dumps(entry["data"]))
    (tmp_path / "params.yaml").write_text(
        yaml.safe_dump(workspace["params"]["params.yaml"]["data"])
    )
    monkeypatch.setattr(experiments, "exp_show_json", lambda *a, **k: exp_show_document())
    result, text = invoke(tmp_path, monkeypatch, experiments=True)
    assert result.exit_code == 0, result.output
    assert "| 1 | 90.00 |" in row(text, "LTTW") and "| 1 | 85.00 |" in row(text, "LTTW-M")
    assert "| 1 | 88.00 |" in row(text, "encoder")
    assert "| 1 | 91.00 |" in row(text, "LTTW [dvc exp k32]")
    assert "not run" in row(text, "LTTW-Att")
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## AG News",
        "## SST-2",
    ]
    assert "| 1 | 70.00 |" in row(text.split("## SST-2")[1], "leam")
    assert "`dvc exp enc`" in text and "`dvc exp lttw-m`" not in text  # = the workspace


STAGE = """
import json, pathlib, yaml
p = yaml.safe_load(open("params.yaml"))
f1 = {"lttw": 0.9, "encoder": 0.8}[p["model"]["variant"]]
pathlib.Path("metrics/folds").mkdir(parents=True, exist_ok=True)
json.dump({"folds": [0]}, open("metrics/summary.json", "w"))
json.dump({"fold": 0, "test": {"f1_macro": f1, "precision_macro": f1, "recall_macro": f1}},
          open("metrics/folds/fold_0.json", "w"))
"""


@pytest.mark.slow
def test_report_reads_real_dvc_experiments(tmp_path):
    """A real `dvc exp run` in a two-file DVC project whose one stage writes the metrics
    files: `lttw report` lists the baseline and the experiment."""
    from support.dvc_runner import dvc
    from support.tiny_project import git_commit, lttw, run

    (tmp_path / "stage.py").write_text(STAGE)
    params = {"data": {"dataset": "ag_news"}, "model": {"variant": "lttw"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "dvc.yaml").write_text(
        yaml.safe_dump(
            {
                "stages": {
                    "evaluate": {
                        "cmd": "python stage.py",
                        "deps": ["stage.py"],
                        "params": ["model.variant"],
                        "metrics": [{"metrics/summary.json": {"cache": False}}, "metrics/folds"],
                    }
                }
            }
        )
    )
    run(["git", "init", "-q"], tmp_path)
    dvc(["init", "-q"], tmp_path)  # DVC in this process: its stage is a process anyway
    dvc(["repro", "-q"], tmp_path)
    git_commit(tmp_path, "baseline")
    dvc(["exp", "run", "-q", "-n", "enc", "-S", "model.variant=encoder"], tmp_path)
    out = lttw(["report", "--out", "report.md"], tmp_path).output
    text = (tmp_path / "report.md").read_text()
    assert "wrote report.md" in out
    assert "| 1 | 90.00 |" in row(text, "LTTW") and "| 1 | 80.00 |" in row(text, "encoder")


def test_each_runs_final_model_states_its_estimate_and_where_it_comes_from():
    from lttw.experiments.cell_folder import Run

    estimate = {"f1_macro": 0.46002, "f1_macro_low": 0.45, "f1_macro_high": 0.47, "n": 5427}
    own = {"trained_on": 48836, "enabled": True, "estimate": {**estimate, "from_folds": False}}
    folds = {"trained_on": 39068, "enabled": False, "estimate": {**estimate, "from_folds": True}}
    older = {"trained_on": 48836, "epochs": 1}  # a summary written before the estimate
    lines = report._samples_and_final(
        {
            "LTTW": Run("goemotions", "LTTW", final=own),
            "tfidf_linear": Run("goemotions", "tfidf_linear", final=folds),
            "encoder": Run("goemotions", "encoder", final=older),
        }
    )
    assert (
        lines[1:]
        == [
            "- LTTW: final model: retrained on 48,836 labelled rows; macro F1 46.0% (95% interval "
            "45.0 to 47.0) on 5,427 texts, from its held-out test sample.",
            "- tfidf_linear: final model: a copy of the first fold's model, on 39,068 labelled "
            "rows; macro F1 46.0% (95% interval 45.0 to 47.0) on 5,427 texts, from the folds.",
        ]
        or lines
    )


def test_the_paper_grid_renders_tables_4_and_5_from_written_and_running_cells(
    tmp_path, monkeypatch
):
    """A grid with the paper's numbers: Table 4 and Table 5 per dataset, each with its
    paired tests; a cell still running shows its finished folds (.partial) as n of m
    (running); another setting of LTTW is its own row; the time per epoch leaves the first
    step's start-up out (+ beside it) where the runs measured it, and the device column
    names the card and how many cells trained on it at once."""
    cells = tmp_path / "evidence" / "runs"
    folds = list(range(10))
    (tmp_path / "experiments").mkdir()
    grid = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "experiments/paper.yaml").read_text()
    )
    (tmp_path / "experiments" / "paper.yaml").write_text(yaml.safe_dump(grid))
    write_run(cells / "paper-lttw", "lttw", {f: LTTW[f % 8] for f in folds})
    write_run(
        cells / "paper-lttw-tuned", "lttw", {f: LTTW[f % 8] + 0.01 + 0.001 * (f % 3) for f in folds}
    )
    record = {"card": "NVIDIA H100 80GB HBM3", "cells_at_once": 3, "jobs": 3}
    card = {"device": "cuda:0", "device_name": record["card"]}
    for name in ("paper-lttw", "paper-lttw-tuned"):
        for metrics in (cells / name / "folds").iterdir():
            fold = json.loads(metrics.read_text())
            fold.update(card, steady_time_per_epoch_s=7.0, startup_s=11.0)
            metrics.write_text(json.dumps(fold))
        trained = {str(f): record for f in folds}
        (cells / name / "cell.json").write_text(json.dumps({"folds_trained": trained}))
    running = cells / ".partial" / "paper-lttw-m"
    write_run(running / "tmp", "lttw", {0: 0.91, 1: 0.925})
    ablation = {"variant": "lttw", "fusion": "none", "attention": "linformer"}
    params = {"data": {"dataset": "ag_news"}, "model": ablation}
    (running / "params.yaml").write_text(yaml.safe_dump(params))  # the runner keeps them
    for fold in (0, 1):
        saved = running / f"fold_{fold}"
        metrics = json.loads((running / "tmp" / "folds" / f"fold_{fold}.json").read_text())
        metrics.pop("device")  # a saved fold's metrics: numbers only
        (saved / "metrics" / "folds").mkdir(parents=True)
        (saved / "data" / "eval" / f"fold_{fold}").mkdir(parents=True)
        (saved / "metrics" / "folds" / f"fold_{fold}.json").write_text(json.dumps(metrics))
        (saved / "complete").touch()
        # the fold's held-out predictions, as the direct runner saves them, and its record
        # of the card (the fold's metrics name no device)
        rows = np.arange(20)
        pd.DataFrame(
            {"part": "test", "label": rows % 4, "pred": np.where(rows < 15 + fold, rows % 4, 0)}
        ).to_parquet(saved / "data" / "eval" / f"fold_{fold}" / "predictions.parquet")
        (saved / "grid").mkdir()
        (saved / "grid" / f"fold_{fold}.json").write_text(json.dumps(record))
    pd.DataFrame(
        {"fold": np.repeat(folds, 20), "row": np.tile(np.arange(20), 10), "label": 0, "pred": 0}
    ).assign(label=lambda f: f["row"] % 4, pred=lambda f: f["row"] % 4).to_parquet(
        cells / "paper-lttw" / "test_predictions.parquet"
    )
    shutil.rmtree(running / "tmp")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["report", "--no-experiments", "--out", "report.md"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "report.md").read_text().split("## Grid `paper` (2 of 9 cells)")[1]
    table4, table5 = text.split("Table 4: LTTW against the baselines:")[1].split("Table 5")
    assert "| LTTW [lttw-tuned] | 10 |" in table4 and "| LTTW-M" not in table4
    assert "| LTTW [lttw-tuned] | 10 | Wilcoxon signed-rank | -1.09 |" in table4
    assert "| LTTW-M | 2 of 10 (running) |" in table5 and "[lttw-tuned]" not in table5
    assert "| LTTW-M | 2 | paired t-test |" in table5
    # McNemar on the running cell's saved folds (right only with LTTW: 4 + 3 texts), and
    # its device from the runner's records
    assert "| 0.016 (7 / 0) |" in row(table5.split("LTTW vs")[1], "LTTW-M")
    assert "| NVIDIA H100 80GB HBM3 (3 cell(s) at once) |" in row(table5, "LTTW-M")
    lttw_row = row(table5, "LTTW")
    assert "| 7.00 (+11.0) | 100.0 | NVIDIA H100 80GB HBM3 (3 cell(s) at once) |" in lttw_row
    assert "| 10.50* |" in row(table5, "LTTW-M")  # no start-up measured apart


def test_a_numbers_only_workspace_is_named_by_its_params_and_models(tmp_path):
    """The pipeline's metrics hold numbers only: the report names the run from params.yaml
    (dataset, variant, ablation) and each fold's device from its model folder's lttw.json."""
    from lttw.reporting.runs import collect_runs

    metrics = write_run(tmp_path / "metrics", "ignored", {0: 0.9, 1: 0.8})
    (metrics / "summary.json").write_text(json.dumps({"folds": [0, 1]}))
    for fold in (0, 1):
        path = metrics / "folds" / f"fold_{fold}.json"
        doc = json.loads(path.read_text())
        path.write_text(
            json.dumps({k: v for k, v in doc.items() if k not in ("variant", "device")})
        )
        model = tmp_path / "models" / f"fold_{fold}"
        model.mkdir(parents=True)
        card = {"device": "cuda:0", "device_name": "NVIDIA H200"} if fold == 0 else {}
        (model / "lttw.json").write_text(json.dumps({"trained_on": card}))
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {"data": {"dataset": "sst2"}, "model": {"variant": "lttw", "fusion": "none"}}
        )
    )
    (run,) = collect_runs(metrics, params, [])
    assert (run.dataset, run.variant) == ("sst2", "LTTW-M")
    assert run.folds[0]["device_name"] == "NVIDIA H200" and "device" not in run.folds[1]
    assert report._device(run) == "?, NVIDIA H200"
