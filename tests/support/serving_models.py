"""A tiny trained-looking LTTW model folder for the serving tests: the tiny random BERT
(conftest's ``tiny_encoder_dir``), latent factors fitted on a few topic texts, Linformer
attention and the head, laid out as the train stage writes it (config.json,
model.safetensors, labels.json, lttw.json, tokenizer/, factors/) and, as it does, its
checksums recorded last. Built in about a second."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CLASSES = ["World", "Sports", "Business", "Sci/Tech"]
TOPICS = [
    "government president war world news",
    "team game match player season score",
    "company market stock price oil bank shares profit deal",
    "computer internet technology science tech music",
]


def labelled_texts(n_per_class: int = 6) -> tuple[list[str], np.ndarray]:
    """Topic texts of varied length (every class), and their label ids."""
    texts, labels = [], []
    for i in range(n_per_class):
        for label, topic in enumerate(TOPICS):
            words = topic.split()
            texts.append(" ".join(words[j % len(words)] for j in range(i, i + 2 + 3 * i)))
            labels.append(label)
    return texts, np.array(labels)


_BUILT: dict[Path, Path] = {}


def shared_lttw_folder(tmp_path_factory, encoder_dir: Path) -> Path:
    """One ``build_lttw_folder`` per test session (read-only for the tests that share it)."""
    if encoder_dir not in _BUILT:
        _BUILT[encoder_dir] = build_lttw_folder(
            tmp_path_factory.mktemp("lttw") / "model", encoder_dir
        )
    return _BUILT[encoder_dir]


def build_lttw_folder(folder: Path, encoder_dir: Path) -> Path:
    import torch

    from lttw.encoder.tokenizer import load_tokenizer, save_tokenizer
    from lttw.factors.counts import normalise_rows, save_counts, word_label_counts
    from lttw.factors.nmf import latent_factors, save_factors
    from lttw.models.bundle import TOKENIZER, write_model_folder
    from lttw.models.folder_files import record_checksums
    from lttw.models.lttw import LTTWClassifier
    from lttw.models.registry import save_model
    from lttw.settings import CountSettings, ModelSettings, NMFSettings, Settings
    from lttw.text.words import WordSplitter, write_rule

    folder = Path(folder)
    work = folder.parent / f".{folder.name}-factors"
    texts, labels = labelled_texts()
    counts, vocab = word_label_counts(texts, labels, len(CLASSES), CountSettings())
    nmf = NMFSettings(rank=3, max_iter=100)
    save_counts(work / "counts", counts, vocab)
    write_rule(work / "counts", WordSplitter())
    save_factors(work / "nmf", latent_factors(normalise_rows(counts), 3, nmf, random_state=0))
    settings = Settings(
        model=ModelSettings(
            variant="lttw", encoder=str(encoder_dir), max_len=32, k=4, s=4, heads=2, linformer_k=8
        ),
        nmf=nmf,
    )
    torch.manual_seed(0)
    model = LTTWClassifier.from_settings(settings.model, len(CLASSES), (8, 3), str(encoder_dir))
    save_model(model, folder)
    write_model_folder(
        folder,
        CLASSES,
        settings.model,
        0,
        counts=settings.counts,
        seed=settings.seed,
        words=WordSplitter(),
        factor_dirs=[work / "counts", work / "nmf"],
    )
    save_tokenizer(load_tokenizer(encoder_dir), folder / TOKENIZER)
    record_checksums(folder)  # as the train stage writes them; again once fitted
    _fit(folder, texts, labels)
    record_checksums(folder)
    return folder


def _fit(folder: Path, texts: list[str], labels: np.ndarray, steps: int = 20) -> None:
    """A few full-batch Adam steps on the topic texts, so that the labels differ by text
    (as a trained model's do) rather than all being one random class."""
    import torch

    from lttw.inference.predict import Predictor
    from lttw.models.registry import save_model

    predictor = Predictor.load(folder)
    model = predictor.model.train()
    data = predictor.model_inputs(texts)
    batch, _ = data.batch(torch.arange(len(texts)), predictor.runtime)
    target = torch.from_numpy(labels)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(**batch), target).backward()
        optimiser.step()
    save_model(model.eval(), folder)
