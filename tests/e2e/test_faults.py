"""Faults and reproducibility (issue 7), with the real ``dvc repro`` on the tiny profile.

* Two tiny projects with the same parameters, built independently: ``reference``, a copy
  of the session's tiny run (``tiny_repro``) switched to ``FAULT_EPOCHS``, runs ``dvc repro``
  uninterrupted (training and what follows, in the background, while the other one is being
  killed); ``killed``, built from scratch, runs ``dvc repro`` three times: the first gets ``kill -9`` (its whole process
  group) while ``features@0`` writes its tensor; the second reruns ``features@0`` (and
  nothing before it) and gets ``kill -9`` in ``train@0`` after an epoch checkpoint; the third
  resumes training from that checkpoint and completes. After each kill no output file is
  half-written (every file under data/, metrics/, models/ parses); at the end the metrics
  equal the reference's exactly (timings aside) and so do the model weights, bit for bit.
* The two projects' ``dvc.lock`` output hashes are identical for every stage; the model
  weights and predictions too. ``train@0`` / ``evaluate@0`` lock hashes differ only through
  the measured timings stored in ``metrics/train/fold_i.json`` and the fold metrics.
* Everything the killed project's runs write lies under data/, metrics/, models/, dvclive/
  (plus DVC's own files), nothing in pickle formats, and the model folder loads without pickle.

Train runs ``FAULT_EPOCHS`` epochs here (tiny profile: 1) so that a kill can land between
two epoch checkpoints.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from support.tiny_project import (
    DATASETS,
    env,
    git_commit,
    make_tiny_project,
    ran,
    run,
    set_params,
)

from lttw import layout
from lttw.training.checkpoint import read_checkpoint_state

pytestmark = pytest.mark.slow

FAULT_EPOCHS = 8
TIMING_KEYS = {
    *("time_per_epoch_s", "samples_per_s", "epoch_times_s"),
    *("steady_time_per_epoch_s", "startup_s"),
}
OUTPUT_ROOTS = ("data", "metrics", "models", "dvclive")
DATA_STAGES = ("sample", "folds", "tokens", "counts@0", "nmf@0", "features@0")
PICKLE_SUFFIXES = {".bin", ".pt", ".pth", ".pkl", ".pickle", ".joblib", ".ckpt", ".npy", ".npz"}


# ------------------------------------------------------------------ helpers


class Repro:
    """``dvc repro`` (or another command) in its own process group, output collected live."""

    def __init__(self, root: Path, *args: str):
        self.proc = subprocess.Popen(
            ["dvc", "repro", *args],
            cwd=root,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.chunks: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.chunks.append(line)

    @property
    def output(self) -> str:
        return "".join(self.chunks)

    def wait_for(self, condition, what: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                self.reader.join(5)
                pytest.fail(
                    f"dvc exited ({self.proc.returncode}) before {what}:\n{self.output[-3000:]}"
                )
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"timed out waiting for {what}:\n{self.output[-3000:]}")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL the whole process group: dvc and the stage it runs."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self.reader.join(5)

    def finish(self, timeout: float = 300) -> str:
        self.proc.wait(timeout)
        self.reader.join(5)
        assert self.proc.returncode == 0, f"dvc repro failed:\n{self.output[-4000:]}"
        return self.output


def fault_project(root: Path, encoder_dir: Path) -> Path:
    make_tiny_project(root, encoder_dir)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["train"].update(epochs=FAULT_EPOCHS, patience=0)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    git_commit(root, f"{FAULT_EPOCHS} epochs")
    return root


def snapshot(folder: Path, skip=(".git",)) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime_ns) of every file under ``folder``."""
    out = {}
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if rel.parts and rel.parts[0] in skip:
            continue
        if path.is_file():
            stat = path.stat()
            out[str(rel)] = (stat.st_size, stat.st_mtime_ns)
    return out


def is_temporary(rel: Path) -> bool:
    return any(part.startswith(".") and part.endswith(".tmp") for part in rel.parts)


def damaged_outputs(root: Path) -> tuple[list[str], list[str]]:
    """(files under data/, metrics/, models/ that do not parse, leftover temporaries).

    dvclive/ is left out: dvclive appends its TSV files in place (a cache: false output that
    a rerun rewrites)."""
    import pandas as pd
    import pyarrow.parquet as pq
    from safetensors import safe_open

    bad, temporaries = [], []
    for top in ("data", "metrics", "models"):
        for path in sorted((root / top).rglob("*")) if (root / top).exists() else []:
            rel = path.relative_to(root)
            if is_temporary(rel):
                if path.is_file() or path.is_dir() and is_temporary(Path(rel.name)):
                    temporaries.append(str(rel))
                continue
            if not path.is_file():
                continue
            try:
                if path.suffix == ".parquet":
                    pq.read_table(path)
                elif path.suffix == ".json":
                    json.loads(path.read_text(encoding="utf-8"))
                elif path.suffix == ".safetensors":
                    with safe_open(str(path), "np") as f:
                        for key in f.keys():
                            f.get_tensor(key)
                elif path.suffix == ".csv":
                    pd.read_csv(path)
            except Exception as err:  # noqa: BLE001  (any failure means a damaged file)
                bad.append(f"{rel}: {type(err).__name__}: {err}")
    return bad, temporaries


def lock_outs(root: Path) -> dict[str, dict[str, str]]:
    """stage -> {output path: md5} from dvc.lock."""
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    return {
        stage: {o["path"]: o["md5"] for o in body.get("outs", [])}
        for stage, body in lock["stages"].items()
    }


def file_md5s(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def without_timings(obj):
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if k not in TIMING_KEYS}
    return obj


def read_metrics(root: Path) -> dict:
    return json.loads((root / layout.SUMMARY_METRICS).read_text())


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_repro):
    """An uninterrupted ``dvc repro`` of ``FAULT_EPOCHS`` epochs in a copy of the session's tiny
    run (its data stages, up to features@0, are that run's; training starts afresh: no
    checkpoint folder), started in the background; the value is a callable that waits for it
    and returns (root, output)."""
    root = tiny_repro.copy(tmp_path_factory.mktemp("reference") / "project")
    shutil.rmtree(root / "data" / "checkpoints")
    set_params(root, train={"epochs": FAULT_EPOCHS, "patience": 0})
    git_commit(root, f"{FAULT_EPOCHS} epochs")
    repro = Repro(root)
    result = {}

    def done():
        if not result:
            result.update(root=root, output=repro.finish())
        return result

    yield done
    if repro.proc.poll() is None:
        repro.kill()


@pytest.fixture(scope="module")
def killed(tmp_path_factory, tiny_repro, reference):
    """The project that is killed twice; returns a dict of what each step saw. Its encoder is
    the reference's folder (a parameter: its path is in the lock and the model folder)."""
    params = yaml.safe_load((tiny_repro.root / "params.yaml").read_text())
    tiny_encoder_dir = Path(params["model"]["encoder"])
    root = fault_project(tmp_path_factory.mktemp("killed"), tiny_encoder_dir)
    seen = {
        "root": root,
        "before": snapshot(root),
        "inputs": {"datasets": snapshot(DATASETS), "encoder": snapshot(tiny_encoder_dir)},
    }

    def mid_training() -> bool:
        try:
            meta = read_checkpoint_state(root / layout.checkpoint_dir(0))
        except (OSError, ValueError):  # being replaced right now
            return False
        return meta is not None and 1 <= meta["loop"]["epoch"] < FAULT_EPOCHS

    # 1. kill -9 while features@0 writes its tensor (after it logged the last split)
    first = Repro(root)
    first.wait_for(
        lambda: "Running stage 'features@0'" in first.output, "features@0 to start", timeout=180
    )
    first.wait_for(
        lambda: "predict: factor tensor" in first.output.split("Running stage 'features@0'")[1],
        "features@0 to compute its tensors",
        timeout=60,
    )
    first.kill()
    seen["kill_features"] = {
        "output": first.output,
        "damage": damaged_outputs(root),
        "features": (root / layout.features_file(0)).exists(),
    }

    # 2. dvc repro again: kill -9 in train@0 once an epoch checkpoint (not the last) is saved
    second = Repro(root)
    second.wait_for(lambda: "Running stage 'train@0'" in second.output, "train@0 to start")
    second.wait_for(mid_training, "an epoch checkpoint of train@0", timeout=90)
    second.kill()
    model = root / layout.model_dir(0)
    seen["kill_train"] = {
        "output": second.output,
        "damage": damaged_outputs(root),
        "state": read_checkpoint_state(root / layout.checkpoint_dir(0)),
        "model": sorted(p.name for p in model.iterdir()) if model.exists() else None,
    }

    # 3. dvc repro completes
    seen["final"] = run(["dvc", "repro"], root)
    seen["damage_end"] = damaged_outputs(root)
    seen["inputs_after"] = {"datasets": snapshot(DATASETS), "encoder": snapshot(tiny_encoder_dir)}
    return seen


# ------------------------------------------------------------------ faults


def test_kill_during_data_stage_leaves_nothing_half_written(killed):
    kill = killed["kill_features"]
    assert {"sample", "folds", "tokens", "counts@0", "nmf@0"} <= ran(kill["output"])
    bad, _ = kill["damage"]
    assert bad == [], "half-written outputs after kill -9:\n" + "\n".join(bad)
    # the killed stage's tensor is absent, or whole if the kill came after its rename (it
    # parsed above); DVC reruns the killed stage and nothing that had completed
    assert ran(killed["kill_train"]["output"]) == {"features@0", "train@0"}


def test_kill_during_training_leaves_nothing_half_written(killed):
    kill = killed["kill_train"]
    bad, _ = kill["damage"]
    assert bad == [], "half-written outputs after kill -9:\n" + "\n".join(bad)
    assert kill["model"] is None  # the model folder appears whole at the end, or not at all
    # the kill left a mid-run checkpoint (loop state inside the safetensors file) to resume
    assert kill["state"] is not None and kill["state"]["loop"]["epoch"] >= 1


def test_repro_after_kills_resumes_and_matches_uninterrupted_run(killed, reference):
    out = killed["final"]
    assert ran(out) == {"train@0", "evaluate@0", "final", "summary"}
    assert "resuming from checkpoint" in out, out[-3000:]
    ref_root = reference()["root"]
    # resumed and uninterrupted: the same batches through the same kernels, so exact
    assert without_timings(read_metrics(killed["root"])) == without_timings(read_metrics(ref_root))
    # the resumed model is the uninterrupted one, bit for bit
    ref_model = file_md5s(ref_root / layout.model_dir(0))
    model = file_md5s(killed["root"] / layout.model_dir(0))
    assert ref_model == model


def test_no_temporaries_left_after_completion(killed):
    bad, temporaries = killed["damage_end"]
    assert bad == [] and temporaries == [], bad + temporaries


# ------------------------------------------------------------------ reproducibility


def test_two_projects_give_identical_lock_hashes(killed, reference):
    ref_root = reference()["root"]
    ref, other = lock_outs(ref_root), lock_outs(killed["root"])
    assert ref.keys() == other.keys()
    for stage in DATA_STAGES:
        assert ref[stage] == other[stage], stage
    # train / evaluate: the weights and predictions are identical; their lock hashes differ
    # only through measured timings (metrics/train/fold_0.json, the dvclive curves of
    # epoch time and samples/s, metrics/folds/fold_0.json, metrics/summary.json)
    assert file_md5s(ref_root / layout.eval_dir(0)) == file_md5s(
        killed["root"] / layout.eval_dir(0)
    )
    timed = {str(layout.train_metrics(0)), str(layout.fold_metrics(0)), str(layout.SUMMARY_METRICS)}
    timed.add(str(layout.training_curves_png(0)))  # drawn from the dvclive curves
    for stage in ("train@0", "evaluate@0", "summary"):
        differing = {path for path, md5 in ref[stage].items() if other[stage][path] != md5}
        assert {p for p in differing if not p.startswith(str(layout.live_dir(0)))} <= timed, (
            stage,
            differing,
        )
    fold = [
        json.loads((root / layout.fold_metrics(0)).read_text())
        for root in (ref_root, killed["root"])
    ]
    assert without_timings(fold[0]) == without_timings(fold[1])


def test_seed_is_recorded(reference):
    root = reference()["root"]
    seed = yaml.safe_load((root / "params.yaml").read_text())["seed"]
    assert read_metrics(root)["seed"] == seed
    assert json.loads((root / layout.fold_metrics(0)).read_text())["seed"] == seed
    assert json.loads((root / layout.LABELS_JSON).read_text())["seed"] == seed


# ------------------------------------------------------------------ safe artifacts


def test_everything_written_lies_under_the_output_folders(killed):
    root, before = killed["root"], killed["before"]
    after = snapshot(root)
    written = sorted(path for path, stat in after.items() if before.get(path) != stat)
    dvc_own = lambda p: p == "dvc.lock" or p.startswith(".dvc/") or p.endswith(".gitignore")
    outside = [p for p in written if Path(p).parts[0] not in OUTPUT_ROOTS and not dvc_own(p)]
    assert outside == [], f"written outside {OUTPUT_ROOTS}: {outside}"
    assert any(p.startswith("models/") for p in written)
    # the inputs (the dataset folder, the encoder folder) are read, never written
    assert killed["inputs_after"] == killed["inputs"]


def test_no_pickle_files_and_model_folder_loads_without_pickle(reference, monkeypatch):
    import torch
    from safetensors import safe_open

    root = reference()["root"]
    files = [p for top in OUTPUT_ROOTS for p in (root / top).rglob("*") if p.is_file()]
    pickles = [str(p.relative_to(root)) for p in files if p.suffix.lower() in PICKLE_SUFFIXES]
    assert pickles == [], pickles
    weights = sorted((root / "models").rglob("*.safetensors"))
    assert weights, "no safetensors under models/"
    for path in weights:
        with safe_open(str(path), "pt") as f:
            assert list(f.keys())

    def refuse(*args, **kwargs):
        raise AssertionError("a model folder must load without pickle")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    from lttw.inference.predict import Predictor

    probs = Predictor.load(root / layout.model_dir(0)).predict_proba(["the team won the match"])
    assert probs.shape == (1, 4) and abs(float(probs.sum()) - 1.0) < 1e-4
