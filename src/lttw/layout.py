"""Where each stage's artifacts live, relative to the repository root.

``dvc.yaml`` spells the same paths out (DVC needs them literally); stages, the CLI and tests
take them from here so that no path is written twice in Python.
"""

from __future__ import annotations

from pathlib import Path

SPLITS = ("train", "test", "predict")

SAMPLE_DIR = Path("data/sample")
LABELS_JSON = SAMPLE_DIR / "labels.json"  # {"classes": [...], "dataset": ..., ...}
FOLDS_PARQUET = Path("data/folds/folds.parquet")  # columns: row, fold
TOKENS_DIR = Path("data/tokens")  # tokens.safetensors + tokenizer/
ENCODED_DIR = Path("data/encoded")  # encoded.json (+ states.safetensors: train.freeze_encoder)
COUNTS_DIR = Path("data/counts")
NMF_DIR = Path("data/nmf")
FEATURES_DIR = Path("data/features")
CHECKPOINTS_DIR = Path("data/checkpoints")
MODELS_DIR = Path("models")
EVAL_DIR = Path("data/eval")
DVCLIVE_DIR = Path("dvclive")
METRICS_DIR = Path("metrics")


def sample_parquet(split: str) -> Path:
    return SAMPLE_DIR / f"{split}.parquet"  # columns: text (str), label (int64 0..p-1), source_row


def tokens_file() -> Path:
    return TOKENS_DIR / "tokens.safetensors"  # {split}_input_ids int32, {split}_attention_mask int8


def tokenizer_dir() -> Path:
    return TOKENS_DIR / "tokenizer"


def extended_encoder_dir() -> Path:
    """The encoder with its vocabulary extended (model.extend_vocab), where the tokens stage
    extended it: a Hugging Face folder (config, weights, tokenizer)."""
    return TOKENS_DIR / "encoder"


def fold_dir(base: Path, fold: int | str) -> Path:
    return base / f"fold_{fold}"


def counts_dir(fold: int) -> Path:
    return fold_dir(COUNTS_DIR, fold)  # word_label_counts.safetensors + vocabulary.json


def nmf_dir(fold: int) -> Path:
    return fold_dir(NMF_DIR, fold)  # latent_factors.safetensors (word_factors, factor_label)


def features_file(fold: int | str) -> Path:
    return fold_dir(FEATURES_DIR, fold) / "factors.safetensors"  # {split}: (n, k+s, rank) f32


def model_dir(fold: int) -> Path:
    return fold_dir(MODELS_DIR, fold)


def checkpoint_dir(fold: int) -> Path:
    return fold_dir(CHECKPOINTS_DIR, fold)


def live_dir(fold: int) -> Path:
    return DVCLIVE_DIR / "train" / f"fold_{fold}"


def eval_dir(fold: int) -> Path:
    return fold_dir(EVAL_DIR, fold)


def nmf_metrics(fold: int) -> Path:
    return METRICS_DIR / "nmf" / f"fold_{fold}.json"


def train_metrics(fold: int) -> Path:
    return METRICS_DIR / "train" / f"fold_{fold}.json"  # time per epoch, samples/s, device


def fold_metrics(fold: int) -> Path:
    return METRICS_DIR / "folds" / f"fold_{fold}.json"


def confusion_csv(fold: int) -> Path:
    return eval_dir(fold) / "confusion.csv"  # actual, predicted (held-out test)


def held_out_plots(fold: int) -> Path:
    """The held-out test sample's pictures (DVC plots): confusion.png, reliability.png,
    precision_recall.png (``evaluation.plots``)."""
    return METRICS_DIR / "held_out" / f"fold_{fold}"


def training_curves_png(fold: int) -> Path:
    """The fold's training curves, a DVC plot (``evaluation.training_curves``)."""
    return METRICS_DIR / "training" / f"fold_{fold}.png"


SUMMARY_METRICS = METRICS_DIR / "summary.json"
FINAL_MODEL_DIR = MODELS_DIR / "final"  # the final stage's model folder (the one to deploy)
FINAL_METRICS = METRICS_DIR / "final.json"  # the final stage's record: rows, epochs, quality
REPORT_MD = METRICS_DIR / "report.md"
