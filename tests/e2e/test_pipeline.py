"""The real `dvc repro`, end to end, on a tiny profile in a temporary copy of the repo; then
what a second run and a changed parameter reran, read from DVC's own output (a k change and
back again: the same dvc.yaml in a user's project, tests/e2e/test_init_project.py; an
nmf.rank change reruns nmf, not counts: tests/e2e/test_frozen_encoder.py's
``test_states_rerun_on_encoder_or_max_len_only``, in one ``dvc exp run`` with other changes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from support.dvc_runner import dvc
from support.stage_graph import undeclared_reads
from support.tiny_project import dvc_status, ran, run, set_params

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_repro) -> Path:
    """A copy of the session's tiny pipeline run (``tiny_repro``), for experiments."""
    return tiny_repro.copy(tmp_path_factory.mktemp("pipeline") / "project")


def test_repro_runs_every_stage_then_nothing(tiny_repro, project):
    """The session's first ``dvc repro`` ran every stage, each reading only parameters its
    dvc.yaml entry declares (traced); after it, in a copy, no stage is stale."""
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
    assert (project / "data/eval/fold_0/confusion.csv").is_file()
    assert (project / "dvclive/train/fold_0/plots/metrics/train/loss.tsv").is_file()

    # what `dvc repro` would rerun, as it judges it: DVC's status of every stage, in process
    assert dvc_status(project) == {}


def _leaves(doc, path=""):
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _leaves(value, f"{path}[{i}]")
    else:
        yield path, doc


def test_metrics_files_hold_numbers_only(tiny_repro):
    """Every value `dvc metrics show` reads is a number (no words, no true / false): the
    dataset and variant are parameters, the training device the model folder's."""
    shown = json.loads(dvc(["metrics", "show", "--json"], tiny_repro.root))
    (workspace,) = shown.values()  # one revision: the workspace
    files = workspace["data"]
    assert {"metrics/summary.json", "metrics/final.json", "metrics/folds/fold_0.json"} <= set(files)
    leaves = [
        (f"{name}:{key}", value)
        for name, entry in files.items()
        for key, value in _leaves(entry.get("data", {}))
    ]
    assert len(leaves) > 50
    words = [(key, v) for key, v in leaves if isinstance(v, (str, bool)) or v is None]
    assert words == []
    meta = json.loads((tiny_repro.root / "models/fold_0/lttw.json").read_text())
    assert meta["trained_on"]["device"] == "cpu" and meta["trained_on"]["device_name"] == "cpu"


def test_baseline_variant_keeps_factor_stages_cached(project):
    # as in a queued experiment's fresh copy: no checkpoint folder
    shutil.rmtree(project / "data" / "checkpoints")
    # a variant without latent factors: changing k must not retrain it
    # (params.yaml edited and `dvc repro` up to train@0: what `dvc exp run -S` does, without
    # its own work and the stages after training)
    set_params(project, model={"variant": "tfidf_linear"})
    assert "train@0" in ran(run(["dvc", "repro", "train@0"], project))
    features = lock_outs(project, "features@0")
    set_params(project, model={"k": 3})
    out = run(["dvc", "repro", "train@0"], project)
    assert ran(out) == {"features@0"}  # k is its parameter: it reruns ...
    # ... and writes the same tensor (none of the variant's inputs): train@0 is not rerun,
    # and evaluate@0, which reads the tensor and the model, stays cached as well
    assert lock_outs(project, "features@0") == features


def lock_outs(project: Path, stage: str) -> dict[str, str]:
    """output path -> md5 of ``stage`` in ``project``'s dvc.lock."""
    lock = yaml.safe_load((project / "dvc.lock").read_text())
    return {out["path"]: out["md5"] for out in lock["stages"][stage]["outs"]}
