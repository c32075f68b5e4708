"""The model card of a fold's model folder (``ROOT/models/fold_N``), made when ``lttw export``
copies a folder that has none: the train stage writes the folder before the fold is
evaluated, so its card comes from the project's files afterwards: the fold's train part
(rows, label counts), its model's own predictions on the held-out test sample (the estimate
with its interval; else on its fold's test part), ``params.yaml`` and the code version."""

from __future__ import annotations

from pathlib import Path

from lttw import layout
from lttw.evaluation.estimate import SOURCES, fold_estimate, own_test_estimate
from lttw.io import read_json, read_yaml
from lttw.models.card import card_metrics
from lttw.models.card_text import card_source, render_card
from lttw.settings import DataSettings
from lttw.training.final import fold_train_counts
from lttw.training.final_card import GROUPS, META, code_version, dataset_manifest


def fold_card(folder: Path) -> tuple[dict, str] | None:
    """``(metrics.json, README.md)`` of a pipeline fold folder; None where the folder is no
    fold's or the project's files it needs are gone (a copy elsewhere)."""
    meta = read_json(folder / META)
    fold = meta.get("fold") if isinstance(meta, dict) else None
    root = folder.resolve().parent.parent
    needed = [layout.LABELS_JSON, layout.FOLDS_PARQUET, layout.eval_dir(fold or 0)]
    if not isinstance(fold, int) or not all((root / path).exists() for path in needed):
        return None
    info = read_json(root / layout.LABELS_JSON)
    n_rows, n_labels, counts = fold_train_counts(fold, root)
    measured = own_test_estimate(fold, n_labels, root)
    if not measured:  # no held-out test sample: its own fold's test part
        measured = {"estimate": fold_estimate([fold], n_labels, root)}
    record = {"trained_on": n_rows, "classes": n_labels, **measured}
    source = "test" if "test" in measured else "fold_test"
    about = {
        "model": f"{layout.MODELS_DIR.as_posix()}/{folder.resolve().name}",
        "rows": f"fold {fold}'s train part",
        "label_counts": counts,
        "calibration": f"its own, fitted on fold {fold}'s validation part",
        "estimate_source": SOURCES["test"]
        if source == "test"
        else f"its own predictions on fold {fold}'s test part (none of its rows in training)",
    }
    doc = card_metrics(record, about, info, code_version())
    params = root / "params.yaml"
    settings = read_yaml(params) if params.is_file() else {}
    settings = settings if isinstance(settings, dict) else {}
    shown = {k: v for k, v in settings.items() if k in ("seed", *GROUPS)}
    return doc, render_card(doc, about, meta, info, shown, _source(settings, root))


def _source(settings: dict, root: Path) -> dict:
    """``card_source`` of the project at ``root`` with parameters ``settings``
    (``params.yaml``: ``data.root``, ``data.dataset``, ``final.license``)."""
    data, final = settings.get("data") or {}, settings.get("final") or {}
    license = final.get("license") if isinstance(final, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("dataset"), str):
        return card_source(None, license if isinstance(license, str) else None)
    manifest = dataset_manifest(str(data.get("root", DataSettings().root)), data["dataset"], root)
    return card_source(manifest, license if isinstance(license, str) else None)
