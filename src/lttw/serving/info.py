"""What a served model is: labels, variant, encoder, word-splitting rule, how it runs, and the
model folder's metrics (``GET /info``): its model card's ``metrics.json`` (``lttw.models.card``:
rows, classes, the estimate with its interval and source, calibration; ``models/final`` has
one, ``lttw export`` carries it), else the pipeline's metrics of a fold's folder."""

from __future__ import annotations

from pathlib import Path

from lttw import layout
from lttw.io import read_json
from lttw.models.calibration import Calibration
from lttw.models.files import META
from lttw.models.files import METRICS as METRICS_FILE


def folder_metrics(folder: str | Path) -> dict:
    """``metrics.json`` of the folder (a model card's, or an exported folder's); for a
    pipeline folder without one, ``ROOT/models/fold_N``,
    ``ROOT/metrics/folds/fold_N.json`` (held-out evaluation) and ``metrics/train/fold_N.json``
    (training) where they exist; else {}."""
    folder = Path(folder)
    if (folder / METRICS_FILE).is_file():
        doc = read_json(folder / METRICS_FILE)
        return doc if isinstance(doc, dict) else {}
    meta = read_json(folder / META) if (folder / META).is_file() else {}
    fold = meta.get("fold") if isinstance(meta, dict) else None
    root = folder.resolve().parent.parent
    if not isinstance(fold, int) or folder.resolve().parent.name != layout.MODELS_DIR.name:
        return {}
    found = {}
    for key, path in (
        ("evaluation", layout.fold_metrics(fold)),
        ("training", layout.train_metrics(fold)),
    ):
        if (root / path).is_file():
            found[key] = read_json(root / path)
    return found


def encoder_name(encoder: str | None) -> str | None:
    """The encoder as a name, never a local path: a hub name stays as it is
    ('sentence-transformers/all-MiniLM-L6-v2'); a hub cache folder
    ('.../models--org--name/snapshots/abc') becomes 'org/name'; another local folder its
    last component."""
    if not encoder:
        return encoder
    path = Path(encoder).expanduser()
    local = path.is_absolute() or encoder.startswith((".", "~")) or path.exists()
    if not local:
        return encoder
    for part in reversed(path.parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    return path.name or encoder


def model_info(predictor, backend: str) -> dict:
    """The ``GET /info`` document of a loaded ``Predictor``."""
    from lttw.models.onnx_classifier import read_record

    meta = predictor.meta
    calibration = getattr(predictor, "calibration", None) or Calibration()
    return {
        "labels": list(predictor.classes),
        "multi_label": calibration.multi_label,
        "calibration": calibration.to_dict(),
        "variant": meta["variant"],
        "encoder": encoder_name(meta.get("encoder")),
        "words": meta.get("words"),  # an ensemble's parts record theirs
        "max_len": meta.get("max_len"),
        "latent_factors": (
            {"k": meta["k"], "s": meta["s"], "ranking": meta["ranking"]}
            if meta.get("with_factors")
            else None
        ),
        "fold": meta.get("fold"),
        "backend": backend,
        "onnx": read_record(predictor.folder),
        "metrics": folder_metrics(predictor.folder),
    }
