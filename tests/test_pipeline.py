"""The real `dvc repro`, end to end, on a tiny profile in a temporary copy of the repo; then
what a second run and a changed parameter reran, read from DVC's own output."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
COPY = ["dvc.yaml", "params.yaml", "stages", "src", ".dvc/config", ".dvcignore", ".gitignore"]
pytestmark = pytest.mark.slow


def tiny_params(encoder_dir: Path, root: Path) -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["data"].update(dataset="ag_news", root=str(root), train_size=160, test_size=40,
                          predict_size=40)
    params["folds"].update(n_folds=4, run=[0])
    params["nmf"].update(rank=3, max_iter=50)
    params["model"].update(encoder=str(encoder_dir), max_len=32, k=4, s=4, heads=2,
                           linformer_k=8)
    params["train"].update(epochs=1, batch_size=16, eval_batch_size=64, lr=1e-3, log_every=2,
                           patience=0, bf16=False)
    return params


def run(args: list[str], cwd: Path) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "HF_HUB_OFFLINE": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{out[-4000:]}"
    return out


def ran(output: str) -> set[str]:
    """Stages DVC ran (not the ones it skipped or restored from its cache)."""
    return set(re.findall(r"Running stage '([^']+)'", output))


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_encoder_dir) -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"{DATASETS} not present")
    root = tmp_path_factory.mktemp("project")
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / name)
    (root / "params.yaml").write_text(yaml.safe_dump(tiny_params(tiny_encoder_dir, DATASETS)))
    run(["git", "init", "-q"], root)
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init",
         "--allow-empty"], root)
    run(["git", "add", "-A"], root)
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "tiny"], root)
    return root


def test_repro_runs_every_stage_then_nothing(project):
    out = run(["dvc", "repro"], project)
    assert ran(out) == {"sample", "folds", "tokens", "counts@0", "nmf@0", "features@0",
                        "train@0", "evaluate@0", "summary"}
    summary = json.loads((project / "metrics/summary.json").read_text())
    assert 0.0 <= summary["test/f1_macro"]["mean"] <= 1.0
    for name in ("config.json", "model.safetensors", "labels.json", "lttw.json"):
        assert (project / "models/fold_0" / name).is_file(), name
    assert (project / "metrics/confusion/fold_0.csv").is_file()
    assert (project / "dvclive/train/fold_0/plots/metrics/train/loss.tsv").is_file()

    again = run(["dvc", "repro"], project)
    assert ran(again) == set()
    run(["git", "add", "-A"], project)
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "lock"], project)


def test_changing_k_reruns_features_and_after_only(project):
    out = run(["dvc", "exp", "run", "-S", "model.k=2"], project)
    assert ran(out) == {"features@0", "train@0", "evaluate@0", "summary"}


def test_changing_rank_reruns_nmf_not_counts(project):
    out = run(["dvc", "exp", "run", "-S", "nmf.rank=2"], project)
    assert ran(out) == {"nmf@0", "features@0", "train@0", "evaluate@0", "summary"}


def test_baseline_variant_keeps_factor_stages_cached(project):
    # a variant without latent factors: changing k must not retrain it
    run(["dvc", "exp", "run", "-S", "model.variant=tfidf_linear"], project)
    out = run(["dvc", "exp", "run", "-S", "model.variant=tfidf_linear", "-S", "model.k=3"],
              project)
    assert "train@0" not in ran(out) and "evaluate@0" not in ran(out)
