"""A trained final model on the held-out test sample (the ``final`` stage's ``test`` record):
none of that sample's rows is in the train sample the final model learned from, so this is a
held-out figure of the model a user deploys, read back from its folder as ``lttw predict``
reads it (``Predictor.load``, from its ``ModelFolder``: its calibration included)."""

from __future__ import annotations

from pathlib import Path


def held_out_test(folder: str | Path, inputs, batch_size: int = 128, seed: int = 0) -> dict:
    """``{"test": metrics, "estimate": ...}`` of the model folder ``folder`` on ``inputs``'
    held-out test sample (``FoldInputs``: its texts and labels): its macro F1 with a bootstrap
    interval and (single-label) its calibration error (``evaluation.estimate``); ``{}``
    where there is no test sample."""
    import logging

    from lttw.evaluation.calibration_error import expected_calibration_error
    from lttw.evaluation.estimate import estimate_of
    from lttw.evaluation.metrics import classification_metrics
    from lttw.inference.predict import Predictor

    texts, labels = inputs.part_texts("test"), inputs.part_labels("test")
    if not len(texts):
        return {}
    predictor = Predictor.load(folder)
    probs = predictor.predict_proba(texts, batch_size)
    predicted = predictor.calibration.decide(probs) if inputs.multi_label else probs.argmax(1)
    metrics = classification_metrics(labels, predicted, inputs.n_labels)
    estimate = estimate_of(labels, predicted, inputs.n_labels, "test", seed)
    if not inputs.multi_label:
        metrics["ece"] = estimate["ece"] = expected_calibration_error(probs, labels)
    logging.getLogger(__name__).info(
        "%s on the held-out test sample: macro F1 %.4f", folder, metrics["f1_macro"]
    )
    return {"test": metrics, "estimate": estimate}
