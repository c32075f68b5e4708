"""The paper's sweeps (Tables 6-8) as grid files (experiments/table*.yaml): their settings are
valid parameters, queued as DVC experiments, and rendered as the paper's tables with paired
tests (Wilcoxon / t-test over folds, McNemar on the held-out texts with one fold)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from scipy.stats import binomtest, ttest_rel
from support.tiny_project import REPO

from lttw.errors import UserError
from lttw.experiments import dvc_queue
from lttw.experiments.assignments import param_value
from lttw.experiments.cell_folder import Run
from lttw.experiments.dvc_queue import plan_queue, queue_command
from lttw.experiments.grids import find_grid, validate_grid
from lttw.reporting.grid_report import load_grids
from lttw.reporting.stats import mcnemar
from lttw.reporting.sweep_report import sweep_sections

GRIDS = REPO / "experiments"
SWEEPS = {g.name: g for g in load_grids(GRIDS) if g.is_sweep}
BASE = yaml.safe_load((REPO / "params.yaml").read_text())


def assignments(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "-S"]
    return dict(p.split("=", 1) for p in pairs)


def test_every_sweep_is_five_valid_settings_with_its_reference_and_the_papers_row():
    assert set(SWEEPS) == {
        "table6",
        "table7",
        "table8-depth",
        "table8-K",
        "table8-batch",
        "table8-lr",
    }
    for grid in SWEEPS.values():
        assert len(grid.cells) == 5 and grid.cell(grid.reference)
        assert all(c.paper and 90 < c.paper[2] < 95 for c in grid.cells)
        validate_grid(grid, BASE)  # every value, as dvc writes it, a valid parameter
        validate_grid(grid.frozen(), BASE)
    table6 = {c.label: (c.params["model.k"], c.params["model.s"]) for c in SWEEPS["table6"].cells}
    assert table6["25 (13 + 12)"] == (13, 12) and table6["20 (10 + 10)"] == (10, 10)
    assert SWEEPS["table6"].cell("ks10").paper == (93.05, 93.02, 93.03)  # the misprint read
    assert SWEEPS["table8-K"].cell("K16").paper == (93.22, 93.17, 93.17)
    assert param_value(2e-5) == "2.0e-5" and yaml.safe_load(param_value(2e-5)) == 2e-5


def test_queue_commands_name_and_set_each_setting():
    grid = SWEEPS["table7"].frozen()
    commands = [queue_command(c, "/abs", ["folds.run=[0,1]"]) for c in grid.cells]
    names = [c[c.index("-n") + 1] for c in commands]
    assert names[2] == "table7-k10s10-frozen" and len(set(names)) == 5
    assert all(
        c[c.index("exp") : c.index("exp") + 3] == ["exp", "run", "--queue"] for c in commands
    )
    assert assignments(commands[1]) == {
        "model.k": "15",
        "model.s": "5",
        "train.freeze_encoder": "true",
        "data.root": "/abs",
        "folds.run": "[0,1]",
    }
    lr = assignments(queue_command(SWEEPS["table8-lr"].cell("lr2e-5"), "/abs"))
    assert yaml.safe_load(lr["train.lr"]) == 2e-5 == yaml.safe_load(lr["train.head_lr"])
    assert "train.freeze_encoder" not in lr
    own = assignments(queue_command(SWEEPS["table6"].cell("ks20"), "/abs", ["data.root=/mine"]))
    assert own["data.root"] == "/mine"
    with pytest.raises(UserError, match="table7 has no cell k9s9.*k15s15"):
        SWEEPS["table7"].select(["k9s9"])
    with pytest.raises(UserError, match="unknown grid 'table9'; the grids in .*table6"):
        find_grid("table9", GRIDS)
    cells = SWEEPS["table6"].select(["ks20", "table6-ks10"])
    commands, skipped = plan_queue(cells, "/abs", [], {"table6-ks10"}, set())
    assert skipped == ["table6-ks10"] and len(commands) == 1  # collected: not queued again


def fake_run(name: str, f1: dict[int, float]) -> Run:
    folds = {
        fold: {"test": {"f1_macro": v, "precision_macro": v, "recall_macro": v}}
        for fold, v in f1.items()
    }
    return Run("ag_news", "LTTW", folds, [f"dvc exp {name}"], name=name, rev="0" * 40)


def sections(runs, predictions=lambda run, fold: None):
    return sweep_sections(list(SWEEPS.values()), runs, predictions=predictions)


def test_sweep_table_with_folds_uses_the_paired_test():
    chosen = {f: 0.90 + 0.01 * f for f in range(4)}
    other = {f: 0.89 + 0.012 * f for f in range(4)}
    runs = [
        fake_run("table7-k10s10-frozen", chosen),
        fake_run("table7-k5s5-frozen", other),
        fake_run("unrelated", chosen),
    ]
    text = "\n".join(sections(runs))
    assert "### Table 7: top k + bottom s latent factors: frozen encoder" in text
    assert "fine-tuned" not in text and "Table 6" not in text  # only sweeps that ran
    row = next(line for line in text.splitlines() if line.startswith("| 5 + 5 |"))
    a, b = np.array(list(other.values())), np.array(list(chosen.values()))
    assert f"{100 * (a - b).mean():+.2f}" in row and "paired t-test" in row
    assert f"{ttest_rel(b, a).pvalue:.3g}" in row
    assert "93.36 / 93.34 / 93.33" in row  # the paper's row beside it
    assert "| 10 + 10 | 4 |" in text and "reference" in text
    assert "| 15 + 15 | not run |" in text


def test_one_fold_uses_mcnemar_on_the_test_texts():
    y = np.array([0, 1, 2, 3] * 25)
    ref_pred, other_pred = y.copy(), y.copy()
    ref_pred[:3] = (y[:3] + 1) % 4  # only the other gets these 3 right ...
    other_pred[10:20] = (y[10:20] + 1) % 4  # ... only the reference these 10
    preds = {"table8-K-K32": (y, ref_pred), "table8-K-K8": (y, other_pred)}
    runs = [
        fake_run("table8-K-K32", {0: 0.97}),
        fake_run("table8-K-K8", {0: 0.90}),
        fake_run("table8-K-K64", {0: 0.95}),
    ]
    text = "\n".join(sections(runs, lambda run, fold: preds.get(run.name)))
    row = next(line for line in text.splitlines() if line.startswith("| 8 |"))
    assert "McNemar exact, discordant 10 / 3" in row and "-7.00" in row
    assert f"{binomtest(3, 13, 0.5).pvalue:.3g}" in row
    assert "n/a (one fold; predictions not readable)" in text  # K64: none
    assert mcnemar((y, y), (y, y))["why"] == "n/a (the same texts right)"
    assert sections([fake_run("lttw", {0: 0.9})]) == []


@pytest.mark.slow
def test_a_grid_setting_runs_through_the_queue_and_renders(queued_grids):
    """Table 7's reference setting on a frozen encoder, run by ``lttw exp run``
    (``support.queued_grids``: one run of the queue, the study's ``frozen`` cell, the same
    setting, beside it: one of the two computes it, the other is restored from DVC's run cache,
    test_study)."""
    from support.queued_grids import experiment_logs, ran_and_restored
    from support.tiny_project import ran

    logs = experiment_logs(queued_grids.queue_run)
    computed, _ = ran_and_restored(logs, "table7-k10s10-frozen", "ev-ag_news-frozen")
    out = logs[computed]
    # a k / s change: the factor tensors and what reads them rerun, and the encoder's states
    # (a frozen encoder); the samples, folds, tokens, counts and NMF are the commit's cached ones
    assert {"features@0", "encode", "train@0", "evaluate@0"} <= ran(out)
    assert not {"sample", "folds", "tokens", "counts@0", "nmf@0"} & ran(out)
    assert "collected table7-k10s10-frozen" in queued_grids.queue_run
    text = queued_grids.cells_report.read_text()  # lttw report --no-experiments: the cells
    table = text.split("### Table 7: top k + bottom s latent factors: frozen encoder")[1]
    rows = {line.split(" | ")[0][2:]: line for line in table.splitlines() if line.startswith("| ")}
    assert rows["10 + 10"].startswith("| 10 + 10 | 1 |") and "reference" in rows["10 + 10"]
    assert "| 5 + 5 | not run |" in table and "| 15 + 15 | not run |" in table
    again = queued_grids.sweep_queued_again
    assert "skipped (collected, queued or run before): table7-k10s10-frozen" in again


def test_cli_passes_the_datasets_root_as_written_or_made_absolute(tmp_path, monkeypatch):
    """A symbolic link in an absolute data.root stays as written (the same parameter value,
    so `sample` stays cached); a relative one is made absolute, links unresolved."""
    import shutil

    from typer.testing import CliRunner

    from lttw.cli import app

    real = tmp_path / "real"
    (real / "ag_news").mkdir(parents=True)  # the grid's dataset: there, as validation checks
    (tmp_path / "link").symlink_to(real)
    shutil.copytree(GRIDS, tmp_path / "experiments")
    seen: list[list[str]] = []
    monkeypatch.setattr(dvc_queue, "run_commands", lambda commands: seen.extend(commands))
    monkeypatch.setattr(dvc_queue, "queued_or_done", lambda: set())
    monkeypatch.chdir(tmp_path)
    for root, expected in (
        (str(tmp_path / "link"), str(tmp_path / "link")),
        ("link/../link", str(tmp_path / "link")),
    ):
        (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"root": root}}))
        seen.clear()
        result = CliRunner().invoke(app, ["exp", "run", "table7", "--only", "k5s5", "--queue"])
        assert result.exit_code == 0, result.output
        assert len(seen) == 1 and assignments(seen[0])["data.root"] == expected
