"""A trained model folder that predicts on raw text by itself, with no pipeline cache:

    config.json, model.safetensors   the classifier (registry.save_model), or tfidf files
    tokenizer/                       the encoder's tokenizer (neural variants)
    labels.json                      class names in label-id order
    lttw.json                        what prediction needs: variant, max_len, k, s, ranking,
                                     the word tokenisation rule, fold, seed
    factors/                         the fold's vocabulary, word counts and NMF factors
                                     (only where latent factors are fused)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from lttw import layout
from lttw.io import write_json

LABELS = "labels.json"
META = "lttw.json"
FACTORS = "factors"
TOKENIZER = "tokenizer"


def write_model_folder(folder: Path, classes: list[str], settings, fold: int,
                       tokenizer_dir: Path | None = None, with_factors: bool = False) -> None:
    """Add everything but the weights to a model folder being written."""
    folder = Path(folder)
    write_json(folder / LABELS, {"classes": classes})
    m = settings.model
    write_json(folder / META, {
        "variant": m.variant, "max_len": m.max_len, "k": m.k, "s": m.s, "ranking": m.ranking,
        "counts": settings.counts.model_dump(), "fold": fold, "seed": settings.seed,
        "encoder": m.encoder, "with_factors": with_factors})
    if tokenizer_dir is not None:
        shutil.copytree(tokenizer_dir, folder / TOKENIZER)
    if with_factors:
        (folder / FACTORS).mkdir()
        for src in (layout.counts_dir(fold), layout.nmf_dir(fold)):
            for f in sorted(Path(src).iterdir()):
                shutil.copy2(f, folder / FACTORS / f.name)
