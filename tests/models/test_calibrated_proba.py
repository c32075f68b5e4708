"""``trained.predict_proba`` through a model folder's ``Calibration`` (issue 42): logits,
the softmax / sigmoid of them, and which folders have one at all."""

from __future__ import annotations

import numpy as np
import torch
from support.training_data import CPU, build_model, make_data

from lttw.models.calibration import Calibration, save_calibration
from lttw.models.trained import folder_calibration, predict_logits, predict_proba


def test_probabilities_through_a_calibration(tiny_encoder_dir):
    model, data = build_model(tiny_encoder_dir), make_data(20, seed=5)
    logits = predict_logits(model, data, CPU, batch_size=8)
    plain = predict_proba(model, data, CPU, batch_size=8)  # no calibration: as before
    assert plain.dtype == np.float32
    # the same batches' logits, softmax row by row on either side: exact (issue 59)
    np.testing.assert_array_equal(plain, torch.softmax(torch.from_numpy(logits), -1).numpy())
    np.testing.assert_allclose(
        predict_proba(model, data, CPU, 8, calibration=Calibration()), plain, atol=1e-6
    )
    sigmoid = predict_proba(model, data, CPU, 8, calibration=Calibration(multi_label=True))
    np.testing.assert_allclose(sigmoid, 1 / (1 + np.exp(-logits.astype(np.float64))), atol=1e-6)
    hot = predict_proba(model, data, CPU, 8, calibration=Calibration(temperature=2.0))
    assert (hot.max(1) <= plain.max(1) + 1e-6).all()  # a temperature above 1 softens
    assert predict_logits(model, make_data(0, seed=1), CPU).shape == (0, 3)


def test_which_folders_have_a_calibration(tmp_path):
    assert folder_calibration(tmp_path, {"variant": "lttw"}) is None  # softmax as before
    assert folder_calibration(tmp_path, {"multi_label": True}) == Calibration(multi_label=True)
    tuned = Calibration(multi_label=True, thresholds=(0.3, 0.6), threshold=0.4)
    save_calibration(tuned, tmp_path)
    assert folder_calibration(tmp_path, {"multi_label": True}) == tuned
