"""A run without validation rows (the final model) borrows calibration.json (and an
ensemble's weights) from a fold's model folder; a run with them never does."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lttw.models.calibration import Calibration, save_calibration
from lttw.models.ensemble import EnsembleWeights
from lttw.training.ensemble import borrowed_weights
from lttw.training.run_outputs import RunPaths, borrowed_calibration


class Inputs:
    def __init__(self, n_val: int):
        self.n_val = n_val

    def part_labels(self, part: str) -> np.ndarray:
        assert part == "val"
        return np.zeros((self.n_val, 3), np.uint8)


def paths_from(source: Path | None) -> RunPaths:
    p = Path("unused")
    return RunPaths(p, p, p, p, p, None, None, source)


def test_borrowed_only_without_validation_rows(tmp_path):
    tuned = Calibration(multi_label=True, thresholds=(0.2, 0.35, 0.7), threshold=0.3)
    save_calibration(tuned, tmp_path)
    assert borrowed_calibration(paths_from(tmp_path), Inputs(0)) == tuned
    assert borrowed_calibration(paths_from(tmp_path), Inputs(5)) is None
    assert borrowed_calibration(paths_from(None), Inputs(0)) is None
    assert borrowed_calibration(paths_from(tmp_path / "missing"), Inputs(0)) is None


def test_final_ensemble_keeps_the_folds_weights(tmp_path):
    EnsembleWeights(("lttw", "tfidf_linear"), (0.7, 0.3), 0.8, 0.5).save(tmp_path)
    weights = borrowed_weights(paths_from(tmp_path), Inputs(0))
    assert weights is not None and weights.weights == (0.7, 0.3)
    assert borrowed_weights(paths_from(tmp_path), Inputs(2)) is None
    assert borrowed_weights(paths_from(None), Inputs(0)) is None
