"""One classifier interface (``lttw.models.trained``) for every variant: predicting no rows
gives a (0, p) array whichever the variant, a save / load round trip keeps the predictions,
and inference predicts without the training loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import lttw.models  # noqa: F401  (registers every variant)
from lttw.data.batching import Batchable
from lttw.device import Runtime
from lttw.models import registry
from lttw.models.tfidf import fit_tfidf_linear
from lttw.models.trained import (
    TEXTS,
    load_classifier,
    predict_proba,
    reads,
    save_classifier,
    variant_reads,
)
from lttw.settings import ModelSettings

N_LABELS, SEQ, SLOTS, RANK = 3, 16, 4, 3
CPU = Runtime(device=torch.device("cpu"), bf16=False)
TEXTS_ = ["the cat sat", "a dog ran", "good film", "bad news today", "the team won"]


def build(variant: str, encoder_dir):
    if variant == "tfidf_linear":
        return fit_tfidf_linear(TEXTS_, [0, 1, 2, 1, 0], N_LABELS)
    settings = ModelSettings(
        variant=variant,
        encoder=str(encoder_dir),
        max_len=SEQ,
        k=2,
        s=2,
        hidden=16,
        layers=1,
        heads=2,
        cnn_widths=[2],
        cnn_channels=4,
        leam_r=1,
        linformer_k=4,
    )
    torch.manual_seed(0)
    shape = (SLOTS, RANK) if variant == "lttw" else None
    return registry.MODEL_REGISTRY[variant].from_settings(
        settings, N_LABELS, shape, str(encoder_dir)
    )


def inputs(model, n: int):
    if reads(model) == TEXTS:
        return TEXTS_[:n]
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 90, (n, SEQ), generator=g, dtype=torch.int32)
    mask = torch.ones(n, SEQ, dtype=torch.int8)
    factors = torch.rand(n, SLOTS, RANK, generator=g) if model.variant == "lttw" else None
    return Batchable(ids, mask, factors, torch.zeros(n, dtype=torch.long))


VARIANTS = sorted(registry.MODEL_REGISTRY) + ["tfidf_linear"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_empty_sample_gives_zero_rows(variant, tiny_encoder_dir, tmp_path):
    """data.predict_size: 0 is valid: every variant predicts (0, p) for it, through one path
    (tfidf_linear crashed in evaluate with sklearn's 'Found array with 0 sample(s)')."""
    model = build(variant, tiny_encoder_dir)
    assert reads(model) == variant_reads(variant)
    empty = predict_proba(model, inputs(model, 0), CPU, batch_size=4)
    assert empty.shape == (0, N_LABELS)
    probs = predict_proba(model, inputs(model, 5), CPU, batch_size=4)
    assert probs.shape == (5, N_LABELS) and np.allclose(probs.sum(1), 1, atol=1e-5)
    save_classifier(model, tmp_path)
    loaded = load_classifier(tmp_path)
    assert type(loaded) is type(model)
    assert np.allclose(
        predict_proba(loaded, inputs(loaded, 5), CPU, batch_size=4), probs, atol=1e-6
    )


def test_inference_does_not_import_the_training_loop():
    """Prediction needs no training code: no import of lttw.training anywhere in
    lttw/inference, function-level imports included (issue 18)."""
    import ast
    from pathlib import Path

    folder = Path(lttw.models.__file__).parents[1] / "inference"
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            found += [f"{path.name}: {n}" for n in names if n.startswith("lttw.training")]
    assert found == []


def test_train_stage_is_a_thin_script():
    """The train stage (src/lttw/stages/train.py) only reads the settings, calls the library
    and logs (issue 18); ``run`` starts it."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).parents[2] / "src/lttw/stages/train.py").read_text())
    functions = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert functions == ["main", "run"]
