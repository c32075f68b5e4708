"""The grid files of experiments/: each loads and every cell's parameters are valid settings;
a bad file is one clear error; `lttw exp list` and `lttw exp status` read them; `lttw report`
renders a plain grid's cells as its own section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.datasets import full_root
from typer.testing import CliRunner

from lttw.cli import app
from lttw.errors import UserError
from lttw.experiments import dvc_queue
from lttw.experiments.assignments import apply_assignment
from lttw.experiments.grids import full_params, load_grid, validate_grid
from lttw.reporting.grid_report import cell_runs, grid_sections, load_grids

REPO = Path(__file__).resolve().parents[2]
GRIDS = REPO / "experiments"
EXPECTED = {
    "paper",
    "ablations",
    "baselines",
    "chinese",
    "ensemble",
    "goemotions",
    "study",
    "table6",
    "table7",
    "table8-depth",
    "table8-K",
    "table8-batch",
    "table8-lr",
}


def test_every_grid_loads_and_its_cells_are_valid_settings():
    base = full_params(REPO / "params.yaml")
    # the datasets' existence is checked where they are (the grids name full datasets)
    base["data"]["root"] = str(full_root() or REPO / "no-such-datasets-folder")
    grids = {g.name: g for g in load_grids(GRIDS, base["folds"]["n_folds"])}
    assert set(grids) == EXPECTED
    names = [c.name for g in grids.values() for c in g.cells]
    assert len(names) == len(set(names))  # one result folder per cell, across grids
    for grid in grids.values():
        assert grid.description and grid.cells
        validate_grid(grid, base)
    # the grids the Makefile ran before, as they were
    paper = grids["paper"]
    assert paper.cell("lttw").params["folds.run"] == list(range(10))
    assert paper.cell("lttw").params["train.lr"] == 2e-5
    assert paper.cell("lttw-att").params["model.attention"] == "mha"
    # the paper's Tables 4 and 5 as data: P / R / F1 (%) and s/epoch where it reports one
    assert list(paper.paper) == ["ag_news", "yahoo_answers", "sst2"]
    assert paper.paper["ag_news"]["LTTW"] == (93.73, 93.71, 93.70, 109.87)
    assert paper.paper["sst2"]["BERT"] == (92.54, 92.48, 92.51, None)
    assert all(len(rows) == 8 for rows in paper.paper.values())
    assert {c.name for c in grids["ablations"].cells} == {"lttw", "lttw-m", "lttw-l", "lttw-att"}
    from lttw.settings import BASELINES

    assert [c.name for c in grids["baselines"].cells] == list(BASELINES)
    zh = {c.name: c.params for c in grids["chinese"].cells}
    assert len(zh) == 13 and zh["zh3k-tfidf_linear"]["data.train_size"] == 3000
    assert zh["zh-lttw-rank5"]["nmf.rank"] == 5 and zh["zh-lttw"]["data.dataset"] == "thucnews"
    assert len(grids["study"].cells) == 22 and grids["study"].cells[0].name == "ev-ag_news-lttw"


@pytest.mark.parametrize(
    "text, message",
    [
        ("cells: [a\n", "not YAML"),
        ("- a\n", "a mapping of description"),
        ("cells: {a: {}}\n", "needs a description"),
        ("description: d\ncells: {}\n", "needs 1 to 500 cells"),
        ("description: d\nsweep: 1\ncells: {a: {}}\n", "unknown key\\(s\\) sweep"),
        ("description: d\ncells: {a: {sett: {}}}\n", "cells.a: unknown key\\(s\\) sett"),
        ("description: d\ncells: {a: {paper: [1, 2]}}\n", "paper must be \\[P, R, F1\\]"),
        ("description: d\npaper: {x: {M: [1, 2, 3, 0]}}\ncells: {a: {}}\n", "paper.x.M must be"),
        ("description: d\npaper: [1]\ncells: {a: {}}\n", "paper must map datasets"),
        ("description: d\nreference: b\ncells: {a: {}}\n", "reference 'b' is not one"),
        ("description: d\ncolumn: x\ncells: {a: {}}\n", "needs a reference cell"),
        ("description: d\npairs: [[a, b]]\ncells: {a: {}}\n", "pairs must be a list of"),
        ("description: d\npairs: [a]\ncells: {a: {}}\n", "pairs must be a list of"),
        ("description: d\npairs: [[a, [b]]]\ncells: {a: {}}\n", "pairs must be a list of"),
        ("description: d\nfolds: [-1]\ncells: {a: {}}\n", "folds must be"),
        ("description: d\ncells: {a: {name: x}, b: {name: x}}\n", "two cells share a name"),
    ],
)
def test_a_bad_grid_file_is_one_clear_error(tmp_path, text, message):
    path = tmp_path / "g.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        load_grid(path)


@pytest.mark.parametrize(
    "cells, message",
    [
        ("{a: {set: {model.kk: 3}}}", "cell g-a: unknown parameter 'model.kk'"),
        ("{a: {set: {modell.k: 3}}}", "'modell' in 'modell.k' is not a parameter group"),
        ("{a: {set: {model.k: -3}}}", "model.k"),
        ("{a: {set: {model.variant: bert}}}", "model.variant"),
    ],
)
def test_an_invalid_parameter_names_the_grid_cell_and_parameter(tmp_path, cells, message):
    path = tmp_path / "g.yaml"
    path.write_text(f"description: d\ncells: {cells}\n")
    with pytest.raises(UserError, match=message) as err:
        validate_grid(load_grid(path), full_params(REPO / "params.yaml"))
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def grid_file(tmp_path: Path, text: str):
    """``text`` as grid file ``g.yaml`` in an ``experiments`` folder of ``tmp_path``, loaded."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "g.yaml").write_text(text)
    return load_grid(tmp_path / "experiments" / "g.yaml")


def write_cell(runs: Path, name: str, variant: str, f1: list[float], model: dict) -> None:
    folder = runs / name
    (folder / "folds").mkdir(parents=True)
    for fold, value in enumerate(f1):
        part = {"f1_macro": value, "precision_macro": value, "recall_macro": value}
        (folder / "folds" / f"fold_{fold}.json").write_text(
            json.dumps({"fold": fold, "test": part, "device": "cuda"})
        )
    (folder / "summary.json").write_text(json.dumps({"folds": list(range(len(f1)))}))
    params = {"data": {"dataset": "ag_news"}, "model": {"variant": variant, **model}}
    (folder / "params.yaml").write_text(yaml.safe_dump(params))


def test_list_status_and_report_read_the_cells(tmp_path, monkeypatch):
    grids = tmp_path / "experiments"
    grids.mkdir()
    (grids / "g.yaml").write_text(
        "description: Two rows. More words.\nreference: lttw\nfolds: [0, 1, 2]\n"
        "cells:\n  lttw: {}\n  lttw-m: {set: {model.fusion: none}}\n  enc: {set: {model.variant: encoder}}\n"
    )
    runs = tmp_path / "evidence" / "runs"
    lttw = {"fusion": "concat", "attention": "linformer"}
    write_cell(runs, "g-lttw", "lttw", [0.9, 0.91, 0.92], lttw)
    write_cell(runs, "g-lttw-m", "lttw", [0.88, 0.885, 0.9], {**lttw, "fusion": "none"})
    partial = runs / ".partial" / "g-enc" / "fold_0"
    partial.mkdir(parents=True)
    (partial / "complete").touch()
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(dvc_queue, "queued_or_done", lambda: set())

    listed = CliRunner().invoke(app, ["exp", "list"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.split() == ["g", "2/3", "Two", "rows"]
    status = CliRunner().invoke(app, ["exp", "status", "g"])
    assert status.exit_code == 0, status.output
    lines = dict(line.split(None, 1) for line in status.output.splitlines()[1:])
    assert lines == {"g-lttw": "collected", "g-lttw-m": "collected", "g-enc": "1/3 folds"}
    unknown = CliRunner().invoke(app, ["exp", "status", "nope"])
    assert unknown.exit_code == 2 and "unknown grid 'nope'; the grids in" in unknown.output

    # the direct runner with no time: validates, skips the written cells, starts nothing
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    window = CliRunner().invoke(app, ["exp", "run", "g", "--runner", "direct", "--budget", "0"])
    assert window.exit_code == 0, window.output
    assert "0 cell(s) written; 2 written before; 0 failed; 1 left (g-enc: rerun to resume)" in (
        window.output
    )
    bad = CliRunner().invoke(app, ["exp", "run", "g", "--runner", "direct", "-S", "model.kk=1"])
    assert bad.exit_code == 2 and "-S: unknown parameter 'model.kk'" in bad.output
    # the runner is chosen, not guessed: DVC's (the default) without dvc installed is an error
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "dvc" else find_spec(name, *a)
    )
    no_dvc = CliRunner().invoke(app, ["exp", "run", "g"])
    assert no_dvc.exit_code == 2, no_dvc.output
    assert "--runner dvc needs dvc, which is not installed" in no_dvc.output
    assert "--runner direct runs the cells without it" in no_dvc.output
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)

    grid = load_grid(grids / "g.yaml")
    assert [r.name for r in cell_runs(grid, runs)] == ["g-lttw", "g-lttw-m"]
    section = "\n".join(grid_sections([grid], runs))
    assert "## Grid `g` (2 of 3 cells)" in section and "### AG News" in section
    report = CliRunner().invoke(app, ["exp", "report", "--out", "report.md"])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "report.md").read_text()
    assert "| LTTW-M | 3 | paired t-test |" in text  # the paired test against LTTW
    assert "| LTTW | 3 | 91.00 ± 1.00 |" in text


def test_a_plain_grid_tests_against_its_reference_cell_with_mcnemar(tmp_path):
    """A plain grid's ``reference`` cell (its variant, on every dataset) is what the others
    are tested against (experiments/ensemble.yaml: the ensemble against its parts), with
    McNemar's test on the pooled held-out texts where the cells keep their predictions."""
    import pandas as pd

    grid = grid_file(
        tmp_path,
        "description: An ensemble and a part.\nreference: ens\nfolds: [0, 1, 2]\n"
        "cells:\n  ens: {set: {model.variant: lttw_tfidf}}\n"
        "  tfidf: {set: {model.variant: tfidf_linear}}\n",
    )
    runs = tmp_path / "runs"
    for name, variant, f1 in (
        ("g-ens", "lttw_tfidf", [0.9, 0.92, 0.91]),
        ("g-tfidf", "tfidf_linear", [0.85, 0.86, 0.84]),
    ):
        write_cell(runs, name, variant, f1, {})
    y = [0, 1, 0, 1, 1, 0]
    for name, pred in (("g-ens", [0, 1, 0, 1, 1, 1]), ("g-tfidf", [1, 0, 1, 0, 1, 1])):
        frame = pd.DataFrame({"fold": 0, "row": range(6), "label": y, "pred": pred})
        frame.to_parquet(runs / name / "test_predictions.parquet")
    section = "\n".join(grid_sections([grid], runs))
    assert "| lttw_tfidf vs | common folds | test | mean ΔF1 (points) | p-value |" in section
    # right only with the ensemble: rows 0-3; only with the part: none
    assert "| tfidf_linear | 3 | paired t-test | +6.00 |" in section
    assert "| 0.12 (4 / 0) |" in section
    assert "LTTW vs" not in section


def test_a_grids_pairs_are_tested_against_each_other(tmp_path):
    """``pairs``: two cells other than the reference are also tested against each other
    (experiments/paper.yaml: the tuned LTTW against the tuned encoder)."""
    grid = grid_file(
        tmp_path,
        "description: Three rows.\nreference: ref\npairs: [[a, b]]\nfolds: [0, 1, 2]\n"
        "cells: {ref: {set: {model.variant: tfidf_linear}}, a: {}, b: {set: {model.variant: encoder}}}\n",
    )
    runs = tmp_path / "runs"
    cells = {"ref": ("tfidf_linear", 0.8), "a": ("lttw", 0.9), "b": ("encoder", 0.88)}
    for key, (variant, low) in cells.items():
        write_cell(runs, f"g-{key}", variant, [low, low + 0.02, low + 0.01], {})
    section = "\n".join(grid_sections([grid], runs))
    assert "| tfidf_linear vs |" in section  # the reference's own tests stay
    pair = section.split("Between `a` and `b`:")[1]
    assert "| LTTW vs | common folds |" in pair
    # LTTW 0.90 / 0.92 / 0.91 against the encoder's 0.88 / 0.90 / 0.89
    assert "| encoder | 3 | paired t-test | +2.00 |" in pair


@pytest.mark.parametrize("name", ["../../../victim", "../..", "/tmp/x", ".hidden", "a/b", "-rf"])
def test_a_cell_name_that_is_no_folder_name_is_refused_before_anything_runs(
    tmp_path, monkeypatch, name
):
    """A cell's name becomes data/grid/cells/<name> and evidence/runs/<name>: one that walks
    out of its folder (or is hidden, nested, an option) is refused, and nothing is touched."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "trav.yaml").write_text(
        yaml.safe_dump({"description": "Walks out.", "cells": {"a": {"name": name}}})
    )
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    victim = tmp_path.parent / f"{tmp_path.name}-victim"
    victim.mkdir()
    (victim / "params.yaml").write_text("keep me\n")
    monkeypatch.chdir(tmp_path)
    for command in (["exp", "run", "trav", "--runner", "direct"], ["exp", "status", "trav"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "cell name" in result.output and "one folder name" in result.output
    assert (victim / "params.yaml").read_text() == "keep me\n"
    assert not (tmp_path / "data").exists() and not (tmp_path / "evidence").exists()


def test_remove_inside_deletes_only_inside_its_folder(tmp_path):
    from lttw.io import remove_inside

    root = tmp_path / "work"
    (root / "cells" / "a").mkdir(parents=True)
    outside = tmp_path / "keep"
    outside.mkdir()
    for bad in (root / ".." / "keep", root, outside, root / "cells" / ".." / ".."):
        with pytest.raises(ValueError, match="refusing to delete"):
            remove_inside(bad, root)
    (root / "cells" / "out").symlink_to(outside)  # a link out: not inside
    with pytest.raises(ValueError, match="not inside"):
        remove_inside(root / "cells" / "out", root)
    (root / "cells" / "in").symlink_to(root / "cells" / "a")  # a link in: still a link
    with pytest.raises(ValueError, match="a link"):
        remove_inside(root / "cells" / "in", root)
    assert outside.is_dir()
    remove_inside(root / "cells" / "a", root)
    remove_inside(root / "cells" / "gone", root)  # nothing there: nothing to do
    assert not (root / "cells" / "a").exists() and (root / "cells").is_dir()


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(9)
)


def test_yaml_aliases_are_refused_in_the_files_a_user_writes(tmp_path, monkeypatch):
    """A grid whose ``set`` holds nested aliases (each level triples the size) is refused at
    once, as are aliases in params.yaml and in a ``-S`` value, and a file over 1 MiB."""
    from lttw.io import MAX_YAML_BYTES
    from lttw.settings import SettingsError, read_settings

    (tmp_path / "experiments").mkdir()
    grid = "description: A bomb.\nset:\n" + "".join(f"  {line}\n" for line in BOMB.splitlines())
    (tmp_path / "experiments" / "bomb.yaml").write_text(grid + "cells: {a: {}}\n")
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["exp", "status", "bomb"])
    assert result.exit_code == 2, result.output
    assert "an alias (*name); aliases are not accepted" in result.output
    (tmp_path / "bomb-params.yaml").write_text(BOMB)
    with pytest.raises(SettingsError, match="aliases are not accepted"):
        read_settings(tmp_path / "bomb-params.yaml")
    with pytest.raises(UserError, match="the value is not YAML"):
        apply_assignment({}, "model.k=*a")
    (tmp_path / "big.yaml").write_text("# " + "x" * MAX_YAML_BYTES + "\n")
    with pytest.raises(SettingsError, match="at most 1,048,576 are read"):
        read_settings(tmp_path / "big.yaml")


def test_every_form_of_grid_is_bounded_and_checked_before_anything_runs(tmp_path):
    """The study form has the cells form's cap; a key written twice is refused (not the last
    one silently kept); a dataset that is not in an existing data.root is refused."""
    from lttw.experiments.grids import MAX_CELLS

    study = {
        "description": "Too many.",
        "datasets": {f"d{i}": {} for i in range(100)},
        "variants": {f"v{i}": {} for i in range(6)},
        "reference": "v0",
    }
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(UserError, match=f"needs 1 to {MAX_CELLS} cells, has 600"):
        load_grid(tmp_path / "big.yaml")
    (tmp_path / "twice.yaml").write_text(
        "description: Twice.\ncells:\n  a: {set: {model.k: 5}}\n  a: {set: {model.k: 9}}\n"
    )
    with pytest.raises(UserError, match="'a' twice in one mapping"):
        load_grid(tmp_path / "twice.yaml")
    root = tmp_path / "datasets"
    (root / "ag_news").mkdir(parents=True)
    (tmp_path / "g.yaml").write_text(
        "description: Two datasets.\ncells:\n  a: {}\n  b: {set: {data.dataset: nope}}\n"
    )
    base = full_params(REPO / "params.yaml")
    base["data"]["root"] = str(root)
    with pytest.raises(UserError, match="cell b: data.dataset 'nope' is not a folder of .*ag_news"):
        validate_grid(load_grid(tmp_path / "g.yaml"), base)


@pytest.mark.parametrize("value", ["yes", "no", "on", "null", "3", "", "1.5", "bert-base"])
def test_a_string_value_reads_back_as_the_same_string(value):
    """A cell's string value goes to -S as YAML: one that YAML reads as a boolean, number or
    null is quoted, so that the stage reads the string back."""
    from lttw.experiments.assignments import param_value

    params: dict = {"model": {"encoder": None}}
    apply_assignment(params, f"model.encoder={param_value(value)}")
    assert params == {"model": {"encoder": value}}


def test_a_broken_grid_file_leaves_the_others_in_the_report(tmp_path, monkeypatch, caplog):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "broken.yaml").write_text("description: [unclosed\n")
    (tmp_path / "experiments" / "g.yaml").write_text("description: One cell.\ncells:\n  lttw: {}\n")
    write_cell(tmp_path / "evidence" / "runs", "g-lttw", "lttw", [0.9, 0.91], {})
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    report = CliRunner().invoke(app, ["exp", "report", "--out", "report.md"])
    assert report.exit_code == 0, report.output
    assert "## Grid `g` (1 of 1 cells)" in (tmp_path / "report.md").read_text()
    assert "left out of the report" in caplog.text and "broken.yaml" in caplog.text
