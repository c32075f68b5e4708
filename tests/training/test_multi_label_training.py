"""Multi-label and class-weighted training (issue 42): the loss with 2-D targets and class
weights, per-label thresholds tuned on the validation part, the refusal of a variant that
cannot train on multi-label data, and a multi-label tfidf_linear run's model folder."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from support.multi_label_data import NEWS_TEXTS, multi_label_tfidf_run
from support.training_data import CPU, N_LABELS, build_model, make_data, train_settings

from lttw.data.batching import Batchable
from lttw.training.losses import (
    class_weights,
    classification_loss,
    loss_weights,
    set_loss_weights,
)
from lttw.training.thresholds import GRID, tune_thresholds


def multi_label(data: Batchable, seed: int) -> Batchable:
    """The same inputs with (n, C) uint8 targets: each row's class, and class 2 as well on
    a random third of the rows whose class is 0 (so rows have one or two labels)."""
    g = torch.Generator().manual_seed(seed)
    y = F.one_hot(data.labels, N_LABELS).to(torch.uint8)
    extra = (data.labels == 0) & (torch.rand(len(y), generator=g) < 0.33)
    y[extra, 2] = 1
    return Batchable(data.input_ids, data.attention_mask, data.factors, y)


# ------------------------------------------------------------------ class weights


def test_balanced_weights_are_scikit_learns():
    from sklearn.utils.class_weight import compute_class_weight

    y = np.array([0, 0, 0, 0, 1, 1, 2, 0, 1, 0])
    want = compute_class_weight("balanced", classes=np.arange(3), y=y)
    np.testing.assert_allclose(class_weights(y, 3, "balanced"), want, rtol=1e-6)
    assert class_weights(y, 3, "none") is None
    # a class absent from the train part keeps weight 1
    np.testing.assert_allclose(class_weights(np.array([0, 0, 1]), 3, "balanced")[2], 1.0)


def test_multi_label_pos_weight_is_negatives_over_positives():
    y = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0]], np.uint8)
    # class 0: 3 of 4 positive -> 1/3; class 1: 2 of 4 -> 1; class 2: none -> 1
    np.testing.assert_allclose(class_weights(y, 3, "balanced"), [1 / 3, 1.0, 1.0], rtol=1e-6)


def test_class_weights_change_the_loss_as_expected():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0]])
    y = torch.tensor([0, 1, 1])
    w = torch.tensor([1.0, 3.0, 0.5])
    # unweighted: the plain mean cross-entropy (the loss the loop always had)
    assert torch.equal(classification_loss(logits, y), F.cross_entropy(logits, y))
    rows = F.cross_entropy(logits, y, reduction="none")
    weighted = (w[y] * rows).sum() / w[y].sum()  # the weighted mean over the batch
    torch.testing.assert_close(classification_loss(logits, y, w), weighted)
    # up-weighting the class the model gets wrong (row 2: class 1) raises the loss
    assert classification_loss(logits, y, w) > classification_loss(logits, y)

    targets = torch.tensor([[1, 0, 0], [0, 1, 1], [0, 0, 1]], dtype=torch.float32)
    pos = torch.tensor([2.0, 1.0, 4.0])
    p = torch.sigmoid(logits)
    manual = -(pos * targets * torch.log(p) + (1 - targets) * torch.log(1 - p)).mean()
    torch.testing.assert_close(classification_loss(logits, targets, pos), manual)
    unweighted = -(targets * torch.log(p) + (1 - targets) * torch.log(1 - p)).mean()
    torch.testing.assert_close(classification_loss(logits, targets), unweighted)


def test_loss_weights_travel_with_the_model_but_are_never_saved(tiny_encoder_dir):
    model = build_model(tiny_encoder_dir)
    assert loss_weights(model) is None
    set_loss_weights(model, np.array([1.0, 2.0, 3.0], np.float32))
    assert torch.equal(loss_weights(model), torch.tensor([1.0, 2.0, 3.0]))
    assert "loss_weight" not in model.state_dict()  # not in checkpoints nor model folders


def test_batches_carry_float_targets_for_multi_label():
    data = multi_label(make_data(10, seed=3), seed=3)
    _, targets = data.batch(torch.arange(4), CPU)
    assert targets.dtype == torch.float32 and targets.shape == (4, N_LABELS)
    _, ids = make_data(10, seed=3).batch(torch.arange(4), CPU)
    assert ids.dtype == torch.long and ids.shape == (4,)


# ------------------------------------------------------------------ the BCE path trains


class LossLog:
    """A ``live`` stand-in that keeps the training loss of every step."""

    def __init__(self):
        self.losses: list[float] = []

    def log_metric(self, name, value):
        if name == "train/loss":
            self.losses.append(value)

    def next_step(self):
        pass


@pytest.mark.parametrize("class_weight", ["none", "balanced"])
def test_binary_cross_entropy_training_learns(tiny_encoder_dir, tmp_path, class_weight):
    from lttw.training.loop import train_classifier

    train = multi_label(make_data(45, seed=1), seed=1)
    val = multi_label(make_data(24, seed=2), seed=2)
    model = build_model(tiny_encoder_dir)
    set_loss_weights(model, class_weights(train.labels.numpy(), N_LABELS, class_weight))
    log = LossLog()
    result = train_classifier(
        model, train, val, train_settings(epochs=4), seed=7, rt=CPU, checkpoint_dir=tmp_path,
        live=log,
    )  # fmt: skip
    first, last = np.mean(log.losses[:3]), np.mean(log.losses[-3:])
    assert last < 0.8 * first, log.losses
    assert result.best_val_f1 > 0.5  # macro F1 at threshold 0.5 on the val part


# ------------------------------------------------------------------ thresholds


def test_thresholds_are_tuned_per_class_with_a_global_fallback():
    probs = np.array(
        [[0.9, 0.35, 0.1], [0.8, 0.1, 0.2], [0.2, 0.32, 0.3], [0.1, 0.05, 0.1]], np.float32
    )
    targets = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 0]], np.uint8)
    cal = tune_thresholds(probs, targets)
    assert cal.multi_label and len(cal.thresholds) == 3
    # class 0: every threshold in (0.2, 0.8] separates it, the one nearest 0.5 wins
    assert cal.thresholds[0] == 0.5
    # class 1: positives at 0.35 and 0.32, the negative at 0.1: 0.15..0.3 separate it,
    # nearest 0.5 -> 0.3
    assert cal.thresholds[1] == 0.3
    # class 2 has no val positive: the global threshold, tuned on micro F1
    assert cal.thresholds[2] == cal.threshold
    assert cal.threshold in GRID
    chosen = probs >= cal.class_thresholds(3)
    np.testing.assert_array_equal(chosen[:, :2], targets[:, :2])
    assert cal.decide(probs)[3].tolist() == [1, 0, 0]  # at_least_one: the most probable


def test_thresholds_of_an_empty_val_part_are_the_defaults():
    cal = tune_thresholds(np.zeros((0, 4), np.float32), np.zeros((0, 4), np.uint8))
    assert cal.multi_label and cal.thresholds == () and cal.threshold == 0.5


# ------------------------------------------------------------------ refusal


def test_a_variant_that_cannot_do_multi_label_is_refused(monkeypatch):
    from lttw.errors import UserError
    from lttw.models.registry import MODEL_REGISTRY
    from lttw.training.multi_label import refuse_single_label_only

    for variant in ("lttw", "leam", "tfidf_linear"):  # one logit per class: supported
        refuse_single_label_only(variant)
    monkeypatch.setattr(MODEL_REGISTRY["leam"], "supports_multi_label", False)
    with pytest.raises(UserError, match=r"^model\.variant leam: cannot train on multi-label"):
        refuse_single_label_only("leam")
    # the ensemble chooses its weights on single-label macro F1: refused before any training
    with pytest.raises(UserError, match=r"^model\.variant lttw_tfidf: cannot train on multi"):
        refuse_single_label_only("lttw_tfidf")


# ------------------------------------------------------------------ a tfidf run's folder


def test_multi_label_tfidf_run_writes_thresholds_in_a_checked_folder(tmp_path):
    from lttw.io import read_json
    from lttw.models.calibration import load_calibration
    from lttw.models.folder_reader import verify
    from lttw.models.trained import folder_calibration, load_classifier, predict_proba

    summary, paths, y = multi_label_tfidf_run(tmp_path, {"class_weight": "balanced"})
    meta = read_json(paths.model / "lttw.json")
    assert meta["multi_label"] is True and meta["class_weight"] == "balanced"
    assert "calibration.json" in meta["sha256"]  # a checksummed file of the folder
    assert not verify(paths.model).problems
    cal = load_calibration(paths.model, multi_label=True)
    assert cal.multi_label and len(cal.thresholds) == 3
    assert folder_calibration(paths.model, meta) == cal
    model = load_classifier(paths.model)
    probs = predict_proba(model, NEWS_TEXTS, calibration=cal)
    np.testing.assert_allclose(probs, predict_proba(model, NEWS_TEXTS), rtol=1e-5)  # sigmoids
    assert 0 <= summary["best_val_f1_macro"] <= 1
    # train F1 of the tuned thresholds: both real labels right on their own texts
    np.testing.assert_array_equal(cal.decide(probs)[:, :2], y[:, :2])
    (paths.model / "calibration.json").unlink()
    assert "calibration.json" in verify(paths.model).problems[0]  # required, and recorded
