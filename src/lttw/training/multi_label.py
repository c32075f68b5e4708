"""What training on multi-label data changes in a run (the train stage's and the final
model's): the refusal of a variant that cannot, and what the model folder records (lttw.json
``"multi_label": true``, per-class thresholds tuned on the val part in calibration.json;
``training.thresholds``). The loss itself: ``training.losses``."""

from __future__ import annotations

from lttw.models.trained import TEXTS, variant_reads
from lttw.training.thresholds import tune_thresholds


def is_multi_label_run(inputs) -> bool:
    """Whether ``inputs`` carry multi-label targets (an indicator matrix per part)."""
    return inputs.part_labels("train").ndim == 2


def refuse_single_label_only(variant: str) -> None:
    """A one-line UserError for a variant that cannot train on multi-label data (an
    ensemble: its weights are chosen on single-label macro F1)."""
    from lttw.models.ensemble import ENSEMBLE_PARTS

    if variant in ENSEMBLE_PARTS:
        raise_single_label_only(variant)
    if variant_reads(variant) == TEXTS:
        return  # tfidf_linear: one vs rest
    from lttw import models  # noqa: F401  (registers the variants)
    from lttw.models.registry import MODEL_REGISTRY

    check_multi_label_variant(variant, MODEL_REGISTRY.get(variant))


def check_threshold_cv(folds: int, variant: str, multi_label: bool) -> None:
    """Refuse, in one line, ``train.threshold_cv`` ``folds`` where it cannot apply:
    single-label data (no thresholds: a temperature is fitted on the val part) or a
    ``model.variant`` trained in more than one pass (k more trainings of a network; it tunes
    on the val part)."""
    if not folds:
        return
    from lttw.errors import UserError

    if not multi_label:
        raise UserError(
            f"train.threshold_cv={folds}: single-label data has no per-label thresholds; "
            "set train.threshold_cv: 0"
        )
    if variant_reads(variant) != TEXTS:
        raise UserError(
            f"train.threshold_cv={folds}: cross-validated thresholds are for tfidf_linear "
            f"(one pass a fit), not model.variant {variant}, which tunes them "
            "on the val part; set train.threshold_cv: 0"
        )


def multi_label_record(class_weight: str, inputs, val_probs) -> tuple[dict, dict]:
    """What a multi-label run adds to its model folder: lttw.json keys and, as
    ``calibration=``, the thresholds tuned on the val part; ``class_weight``
    (``train.class_weight``) where it is not none. Nothing for a single-label run with
    unweighted loss."""
    meta: dict = {}
    if class_weight != "none":
        meta["class_weight"] = class_weight
    if not is_multi_label_run(inputs):
        return meta, {}
    meta["multi_label"] = True  # data.label_sets.MULTI_LABEL_KEY
    return meta, {"calibration": tune_thresholds(val_probs, inputs.part_labels("val"))}


def check_multi_label_variant(variant: str, model_class: type | None) -> None:
    """Refuse, in one line, a ``model.variant`` that cannot train on multi-label data: one
    whose class says ``supports_multi_label = False`` (every variant of this repository's
    registry emits one logit per class, so binary cross-entropy trains it)."""
    if model_class is not None and not getattr(model_class, "supports_multi_label", True):
        raise_single_label_only(variant)


def raise_single_label_only(variant: str) -> None:
    from lttw.errors import UserError

    raise UserError(
        f"model.variant {variant}: cannot train on multi-label data (labels.json "
        '"multi_label": true); choose lttw, tfidf_linear or another variant'
    )
