"""The lttw_tfidf ensemble (models.ensemble, training.ensemble, inference.ensemble_predict):
weights chosen on the validation part only, and a folder that saves and loads symmetrically.
The parts are stood in for by two small tf-idf models (the LTTW part's training is the
train stage's own, tested elsewhere)."""

import json

import numpy as np
import pytest

from lttw.errors import UserError
from lttw.evaluation.temperature import (
    fit_temperature,
    logits_of,
    negative_log_likelihood,
    scaled_probabilities,
)
from lttw.inference.classifier import Classifier
from lttw.inference.predict import Predictor
from lttw.models.bundle import write_model_folder
from lttw.models.calibration import Calibration, save_calibration
from lttw.models.ensemble import ENSEMBLE_FILE, EnsembleWeights, choose_weights
from lttw.models.folder_files import record_checksums
from lttw.models.folder_reader import verify
from lttw.models.tfidf import fit_tfidf_linear
from lttw.settings import ModelSettings, Settings
from lttw.training.ensemble import train_ensemble
from lttw.training.fold import RunPaths
from lttw.training.run_settings import RunSettings

CLASSES = ["sport", "money", "weather"]
WORDS = [["ball", "goal", "match"], ["stock", "market", "price"], ["rain", "cloud", "sun"]]


def texts_and_labels(n: int, seed: int):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    texts = []
    for y in labels:
        own = rng.choice(WORDS[y], 2).tolist()
        other = rng.choice(WORDS[rng.integers(0, 3)], 2).tolist()  # noise from any class
        texts.append(" ".join(own + other))
    return texts, labels.astype(np.int64)


class ValOnlyInputs:
    """A fold's inputs that refuse to hand out anything but the train and val parts."""

    classes, n_labels = CLASSES, 3

    def __init__(self, seed: int = 0):
        self.data = {"train": texts_and_labels(90, seed), "val": texts_and_labels(60, seed + 1)}

    def _part(self, part):
        if part not in self.data:
            raise AssertionError(f"the ensemble read the {part} part")
        return self.data[part]

    def part_texts(self, part):
        return self._part(part)[0]

    def part_labels(self, part):
        return self._part(part)[1]


def fake_train_part(settings, run, inputs, paths, extra_meta):
    """A tf-idf model (logistic for the 'lttw' part, svm for the other) in a model folder."""
    linear = "logistic" if settings.model.variant == "lttw" else "svm"
    model = fit_tfidf_linear(
        inputs.part_texts("train"), inputs.part_labels("train"), 3, linear_model=linear
    )
    paths.model.mkdir(parents=True)
    model.save(paths.model)
    save_calibration(Calibration(temperature=0.7 if linear == "svm" else 1.3), paths.model)
    tfidf = settings.with_variant("tfidf_linear")
    write_model_folder(
        paths.model,
        CLASSES,
        tfidf.model,
        run,
        counts=tfidf.counts,
        seed=tfidf.seed,
        extra_meta=extra_meta,
    )
    record_checksums(paths.model)
    return {"epochs_run": 1, "epochs_planned": 1, "device": "cpu"}


@pytest.fixture(scope="module")
def ensemble_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ensemble")
    paths = RunPaths(*(root / n for n in ("c", "n", "f", "ck", "model", "m.json", "live")))
    settings = RunSettings.of(Settings(model=ModelSettings(variant="lttw_tfidf")))
    summary = train_ensemble(settings, 0, ValOnlyInputs(), paths, None, fake_train_part)
    assert set(summary["weights"]) == {"lttw", "tfidf_linear"}
    assert {"epochs_run", "epochs_planned", "time_per_epoch_s"} <= set(summary)  # the stage logs
    assert json.loads((root / "m.json").read_text())["weights"] == summary["weights"]
    return paths.model


def test_weights_are_chosen_on_the_validation_part_only(ensemble_dir):
    """``ValOnlyInputs`` fails the fixture if any other part is read; the recorded val F1 is
    the chosen weights' F1 on the val part."""
    saved = EnsembleWeights.load(ensemble_dir)
    assert saved.parts == ("lttw", "tfidf_linear") and sum(saved.weights) == pytest.approx(1)
    assert json.loads((ensemble_dir / ENSEMBLE_FILE).read_text())["selected_on"] == "val"
    texts, labels = ValOnlyInputs().data["val"]
    probs = Predictor.load(ensemble_dir).predict_proba(texts)
    f1 = choose_weights(("a", "b"), [probs, probs], labels, 3).val_f1_macro
    assert saved.val_f1_macro == pytest.approx(f1)


def test_the_mixture_temperature_is_fitted_on_the_validation_part(ensemble_dir):
    """The ensemble folder's temperature is the NLL-optimal one of the chosen mixture of the
    parts' calibrated validation probabilities, and it lowers that NLL."""
    texts, labels = ValOnlyInputs().data["val"]
    saved = EnsembleWeights.load(ensemble_dir)
    mixture = saved.combine(
        [Predictor.load(ensemble_dir / p).predict_proba(texts) for p in saved.parts]
    )
    t_mix = json.loads((ensemble_dir / "calibration.json").read_text())["temperature"]
    assert t_mix == pytest.approx(fit_temperature(logits_of(mixture), labels), rel=1e-4)
    nll = negative_log_likelihood
    assert nll(logits_of(mixture), labels, t_mix) < nll(logits_of(mixture), labels, 1.0)


def test_choose_weights_follows_the_better_part():
    labels = np.array([0, 1, 2, 0, 1, 2])
    right = np.eye(3)[labels] * 0.8 + 0.2 / 3
    wrong = np.eye(3)[(labels + 1) % 3] * 0.8 + 0.2 / 3
    assert choose_weights(("a", "b"), [right, wrong], labels, 3).weights == (1.0, 0.0)
    assert choose_weights(("a", "b"), [wrong, right], labels, 3).weights == (0.0, 1.0)
    empty = np.zeros((0, 3))
    assert choose_weights(("a", "b"), [empty, empty], labels[:0], 3).weights == (0.5, 0.5)


def test_save_load_symmetry_and_prediction(ensemble_dir, tmp_path):
    weights = EnsembleWeights(("lttw", "tfidf_linear"), (0.35, 0.65), 0.9, 0.3)
    weights.save(tmp_path)
    assert EnsembleWeights.load(tmp_path) == weights
    assert not verify(ensemble_dir).problems
    predictor = Predictor.load(ensemble_dir)
    texts = ["goal match ball", "stock price rain", "cloud sun rain"]
    got = predictor.predict_proba(texts)
    assert got.shape == (3, 3) and np.allclose(got.sum(1), 1, atol=1e-5)
    saved = EnsembleWeights.load(ensemble_dir)
    parts = []
    for part in saved.parts:  # each part: its Predictor's probabilities, scaled by its
        # folder's temperature (calibration.json) once
        part_predictor = Predictor.load(ensemble_dir / part)
        t = json.loads((ensemble_dir / part / "calibration.json").read_text())["temperature"]
        assert part_predictor.calibration.temperature == t
        parts.append(part_predictor.predict_proba(texts))
    # the mixture, scaled by the ensemble folder's own temperature (its calibration.json)
    t_mix = json.loads((ensemble_dir / "calibration.json").read_text())["temperature"]
    assert predictor.calibration.temperature == t_mix != 1.0
    assert np.allclose(got, scaled_probabilities(logits_of(saved.combine(parts)), t_mix), atol=1e-5)
    assert predictor.predict(texts)[0] == "sport"
    # one Classifier as every backend: its parts (tf-idf) and the ensemble alike
    assert isinstance(predictor, Classifier) and isinstance(part_predictor, Classifier)
    assert predictor.predict(texts, min_prob=1.0) == [None, None, None]
    with pytest.raises(UserError, match="ensemble model folder"):  # explain / ONNX export
        predictor.model_inputs(texts)


def test_a_changed_weights_file_is_refused(ensemble_dir, tmp_path):
    import shutil

    copy = shutil.copytree(ensemble_dir, tmp_path / "copy")
    (copy / ENSEMBLE_FILE).write_text('{"parts": ["lttw"], "weights": [1.0]}')
    with pytest.raises(UserError, match="ensemble.json"):
        Predictor.load(copy)


def test_verify_checks_every_file_of_every_part(ensemble_dir, tmp_path):
    """`lttw verify` on an ensemble checks its parts' files too: a byte flipped in a part's
    weights is an error naming the file, and the parts' files are not 'not read'."""
    import shutil

    from typer.testing import CliRunner

    from lttw import cli

    good = CliRunner().invoke(cli.app, ["verify", str(ensemble_dir)])
    assert good.exit_code == 0, good.output
    assert "not read" not in good.output and "not checked" not in good.output
    copy = shutil.copytree(ensemble_dir, tmp_path / "copy")
    weights = copy / "tfidf_linear" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    bad = CliRunner().invoke(cli.app, ["verify", str(copy)])
    assert bad.exit_code == 3, bad.output
    assert "tfidf_linear/model.safetensors: changed since the model folder was written" in (
        bad.stderr
    )
