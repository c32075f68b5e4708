"""A model folder is read once (``lttw.models.folder_reader``): the classifier is built from
the bytes ``ModelFolder.open`` checked, never from the path again, so a file changed or
removed after the check changes nothing of the loaded model."""

from __future__ import annotations

import shutil

import numpy as np
from support.model_folders import WEIGHTS, build_model_folder

from lttw.inference.predict import Predictor
from lttw.models.model_folder import ModelFolder

TEXTS = ["stocks rally as oil prices fall", "rain and wind tomorrow"]


def test_the_classifier_is_built_from_the_bytes_that_were_checked(tmp_path, tiny_encoder_dir):
    folder = build_model_folder(tmp_path / "model", tiny_encoder_dir)
    want = Predictor.load(folder).predict_proba(TEXTS)
    opened = ModelFolder.open(folder)
    (folder / WEIGHTS).write_bytes(b"not weights")  # after the check: never read again
    shutil.rmtree(folder / "tokenizer")
    got = Predictor(opened).predict_proba(TEXTS)
    np.testing.assert_array_equal(got, want)
