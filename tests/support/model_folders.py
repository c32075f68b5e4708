"""A model folder built around the tiny random BERT, laid out as the train stage writes it."""

from __future__ import annotations

from pathlib import Path

WEIGHTS = "model.safetensors"


def build_model_folder(folder: Path, encoder_dir: Path, pooling: str = "cls") -> Path:
    """An `encoder` classifier folder (no factors) around the tiny random BERT, laid out as
    the train stage writes it: config.json, model.safetensors, labels.json, lttw.json,
    tokenizer/, and last the checksums. ``pooling``: ``model.pooling`` (cls or mean)."""
    import torch

    from lttw.encoder.tokenizer import load_tokenizer, save_tokenizer
    from lttw.models._layers import pretrained_encoder
    from lttw.models.bundle import TOKENIZER, write_model_folder
    from lttw.models.encoder_head import EncoderClassifier, EncoderHeadConfig
    from lttw.models.folder_files import record_checksums
    from lttw.models.registry import save_model
    from lttw.settings import ModelSettings, Settings

    torch.manual_seed(0)
    encoder, config = pretrained_encoder(str(encoder_dir))
    save_model(
        EncoderClassifier(
            EncoderHeadConfig(n_labels=2, encoder_config=config, pooling=pooling), encoder=encoder
        ),
        folder,
    )
    settings = Settings(
        model=ModelSettings(
            variant="encoder", encoder=str(encoder_dir), max_len=32, pooling=pooling
        )
    )
    write_model_folder(
        folder, ["neg", "pos"], settings.model, 0, counts=settings.counts, seed=settings.seed
    )
    save_tokenizer(load_tokenizer(encoder_dir), folder / TOKENIZER)
    record_checksums(folder)
    return folder
