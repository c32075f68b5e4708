"""The real `dvc repro`, end to end, on a tiny profile in a temporary copy of the repo; then
what a second run and a changed parameter reran, read from DVC's own output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from support.stage_graph import undeclared_reads
from support.tiny_project import dvc_status, ran, run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_repro) -> Path:
    """A copy of the session's tiny pipeline run (``tiny_repro``), for experiments."""
    return tiny_repro.copy(tmp_path_factory.mktemp("pipeline") / "project")


def test_repro_runs_every_stage_then_nothing(tiny_repro, project):
    """The session's first ``dvc repro`` ran every stage, each reading only parameters its
    dvc.yaml entry declares (traced); a second one runs nothing."""
    out, trace = tiny_repro.output, tiny_repro.trace
    assert {t.stem for t in trace.glob("*.json")} == {
        "sample",
        "folds",
        "tokens",
        "encode",
        "counts@0",
        "nmf@0",
        "features@0",
        "train@0",
        "evaluate@0",
        "final",
        "summary",
    }
    assert undeclared_reads(trace) == {}, "stages read parameters dvc.yaml does not declare"
    assert ran(out) == {
        "sample",
        "folds",
        "tokens",
        "encode",
        "counts@0",
        "nmf@0",
        "features@0",
        "train@0",
        "evaluate@0",
        "final",
        "summary",
    }
    summary = json.loads((project / "metrics/summary.json").read_text())
    assert 0.0 <= summary["test/f1_macro"]["mean"] <= 1.0
    for name in ("config.json", "model.safetensors", "labels.json", "lttw.json"):
        assert (project / "models/fold_0" / name).is_file(), name
    assert (project / "metrics/confusion/fold_0.csv").is_file()
    assert (project / "dvclive/train/fold_0/plots/metrics/train/loss.tsv").is_file()

    again = run(["dvc", "repro"], project)
    assert ran(again) == set()


def test_changing_k_reruns_features_and_after_only_then_going_back_restores(project, tiny_repro):
    """A k change reruns the factor tensors and what reads them; going back to the session
    run's k restores the fold's model and metrics from DVC's run-cache (which holds every
    stage, train included: its checkpoints are no output)."""
    k = yaml.safe_load((tiny_repro.root / "params.yaml").read_text())["model"]["k"]
    assert k != 2
    out = run(["dvc", "exp", "run", "-S", "model.k=2"], project)
    assert ran(out) == {"features@0", "train@0", "evaluate@0", "final", "summary"}
    out = run(["dvc", "exp", "run", "-S", f"model.k={k}"], project)
    assert not {"features@0", "train@0", "evaluate@0"} & ran(out)
    assert "Stage 'train@0' is cached - skipping run" in out


def test_changing_rank_reruns_nmf_not_counts(project):
    # up to features@0, the first stage after nmf: train@0 and after are then stale (`dvc
    # status`); the k test above trains through what a changed factor tensor reruns
    out = run(["dvc", "exp", "run", "-S", "nmf.rank=2", "features@0"], project)
    assert ran(out) == {"nmf@0", "features@0"}
    assert "train@0" in dvc_status(project, "train@0")


def test_baseline_variant_keeps_factor_stages_cached(project):
    # as in a queued experiment's fresh copy: no checkpoint folder
    shutil.rmtree(project / "data" / "checkpoints")
    # a variant without latent factors: changing k must not retrain it
    run(["dvc", "exp", "run", "-S", "model.variant=tfidf_linear"], project)
    out = run(["dvc", "exp", "run", "-S", "model.variant=tfidf_linear", "-S", "model.k=3"], project)
    assert "train@0" not in ran(out) and "evaluate@0" not in ran(out)
