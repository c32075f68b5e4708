"""Issue 16.1-2: the paper's sweeps as DVC experiment grids (`lttw sweep`), rendered by
`lttw report` next to the paper's tables with paired tests against the chosen setting."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from scipy.stats import binomtest, ttest_rel

from lttw.errors import UserError
from lttw.reporting import sweeps
from lttw.reporting.report import Run
from lttw.reporting.sweep_report import mcnemar, sweep_sections
from lttw.reporting.sweeps import SWEEPS, TABLE8, param_value, queue_commands, sweep_commands
from lttw.settings import settings_from_dict


def assignments(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "-S"]
    return dict(p.split("=", 1) for p in pairs)


def test_every_sweep_is_five_valid_settings_with_its_chosen_one():
    assert set(TABLE8) < set(SWEEPS) and {"table6", "table7"} < set(SWEEPS)
    for sweep in SWEEPS.values():
        assert len(sweep.settings) == 5 and sweep.setting(sweep.chosen)
        for setting in sweep.settings:
            raw: dict = {}
            for dotted, value in setting.params.items():
                group, key = dotted.split(".")
                # the value as dvc writes it into params.yaml and the stages read it back
                raw.setdefault(group, {})[key] = yaml.safe_load(param_value(value))
            settings = settings_from_dict(raw)
            for dotted, value in setting.params.items():
                group, key = dotted.split(".")
                assert getattr(getattr(settings, group), key) == value, (sweep.name, dotted)
    table6 = {
        s.label: (s.params["model.k"], s.params["model.s"]) for s in SWEEPS["table6"].settings
    }
    assert table6["25 (13 + 12)"] == (13, 12) and table6["20 (10 + 10)"] == (10, 10)


def test_queue_commands_name_and_set_each_setting(monkeypatch):
    commands = queue_commands(SWEEPS["table7"], frozen=True, extra=["folds.run=[0,1]"])
    assert len(commands) == 5
    names = [c[c.index("-n") + 1] for c in commands]
    assert names[2] == "table7-k10s10-frozen" and len(set(names)) == 5
    assert all(
        c[c.index("exp") : c.index("exp") + 3] == ["exp", "run", "--queue"] for c in commands
    )
    assert assignments(commands[1]) == {
        "train.freeze_encoder": "true",
        "model.k": "15",
        "model.s": "5",
        "folds.run": "[0,1]",
    }
    lr = assignments(queue_commands(SWEEPS["table8-lr"], False, only=["lr2e-5"])[0])
    assert yaml.safe_load(lr["train.lr"]) == 2e-5 == yaml.safe_load(lr["train.head_lr"])
    assert lr["train.freeze_encoder"] == "false"
    with pytest.raises(UserError, match="table7 has no setting k9s9.*k15s15"):
        queue_commands(SWEEPS["table7"], False, only=["k9s9"])
    with pytest.raises(UserError, match="unknown sweep 'table9'"):
        sweep_commands("table9", False, [], None, True, "/data")
    monkeypatch.setattr(sweeps, "existing_experiments", lambda: set())
    run = sweep_commands("table6", False, [], ["ks20"], True, "/abs/datasets")
    assert assignments(run[0])["data.root"] == "/abs/datasets"
    assert run[-1][-3:] == ["exp", "run", "--run-all"]
    own = sweep_commands("table6", False, ["data.root=/mine"], ["ks20"], False, "/abs")
    assert assignments(own[0])["data.root"] == "/mine" and len(own) == 1
    monkeypatch.setattr(sweeps, "existing_experiments", lambda: {"table6-ks20", "other"})
    with pytest.raises(UserError, match=r"table6-ks20 exist already.*dvc exp remove table6-ks20`"):
        sweep_commands("table6", False, [], None, True, "/abs")


def fake_run(name: str, f1: dict[int, float]) -> Run:
    folds = {
        fold: {"test": {"f1_macro": v, "precision_macro": v, "recall_macro": v}}
        for fold, v in f1.items()
    }
    return Run("ag_news", "LTTW", folds, [f"dvc exp {name}"], name=name, rev="0" * 40)


def test_sweep_table_with_folds_uses_the_paired_test():
    chosen = {f: 0.90 + 0.01 * f for f in range(4)}
    other = {f: 0.89 + 0.012 * f for f in range(4)}
    runs = [
        fake_run("table7-k10s10-frozen", chosen),
        fake_run("table7-k5s5-frozen", other),
        fake_run("unrelated", chosen),
    ]
    text = "\n".join(sweep_sections(runs, predictions=lambda run, fold: None))
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
    text = "\n".join(sweep_sections(runs, predictions=lambda run, fold: preds.get(run.name)))
    row = next(line for line in text.splitlines() if line.startswith("| 8 |"))
    assert "McNemar exact, discordant 10 / 3" in row and "-7.00" in row
    assert f"{binomtest(3, 13, 0.5).pvalue:.3g}" in row
    assert "n/a (one fold; predictions not readable)" in text  # K64: none
    assert mcnemar((y, y), (y, y))["why"] == "n/a (the same texts right)"
    assert sweep_sections([fake_run("lttw", {0: 0.9})]) == []


@pytest.mark.slow
def test_a_two_setting_grid_runs_through_the_queue_and_renders(tmp_path, tiny_repro):
    from support.tiny_project import lttw, ran, run_queue

    project = tiny_repro.copy(tmp_path / "project")  # the tiny pipeline, run and committed
    out = run_queue(
        ["lttw", "sweep", "table7", "--frozen", "--only", "k10s10", "--only", "k5s5"], project
    )
    # one k / s change per experiment: the factor tensors and what reads them rerun; the
    # samples, folds, tokens, counts and NMF are the commit's cached ones; the encoder's
    # states are computed by the first experiment only
    assert out.count("Running stage 'features@0'") == 2
    assert out.count("Running stage 'train@0'") == 2
    assert not {"sample", "folds", "tokens", "counts@0", "nmf@0"} & ran(out)
    assert out.count("Running stage 'encode'") == 1
    lttw(["report", "--out", "report.md"], project)
    text = (project / "report.md").read_text()
    table = text.split("### Table 7: top k + bottom s latent factors: frozen encoder")[1]
    rows = {line.split(" | ")[0][2:]: line for line in table.splitlines() if line.startswith("| ")}
    assert rows["10 + 10"].startswith("| 10 + 10 | 1 |") and "reference" in rows["10 + 10"]
    assert rows["5 + 5"].startswith("| 5 + 5 | 1 |")
    # the predictions were read from DVC's cache at the experiment's revision
    assert "McNemar exact" in rows["5 + 5"] or "the same texts right" in rows["5 + 5"]
    assert "| 15 + 15 | not run |" in table
    again = lttw(["sweep", "table7", "--frozen", "--only", "k5s5"], project, check=False).output
    assert "error: experiments table7-k5s5-frozen exist already" in again


def test_cli_passes_the_datasets_root_as_written_or_made_absolute(tmp_path, monkeypatch):
    """A symbolic link in an absolute data.root stays as written (the same parameter value,
    so `sample` stays cached); a relative one is made absolute, links unresolved."""
    from typer.testing import CliRunner

    from lttw.cli import app

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    seen: list[list[str]] = []
    monkeypatch.setattr(sweeps, "run_commands", lambda commands: seen.extend(commands))
    monkeypatch.setattr(sweeps, "existing_experiments", lambda: set())
    monkeypatch.chdir(tmp_path)
    for root, expected in (
        (str(tmp_path / "link"), str(tmp_path / "link")),
        ("link/../link", str(tmp_path / "link")),
    ):
        (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"root": root}}))
        seen.clear()
        result = CliRunner().invoke(app, ["sweep", "table7", "--only", "k5s5", "--no-run"])
        assert result.exit_code == 0, result.output
        assert len(seen) == 1 and assignments(seen[0])["data.root"] == expected
