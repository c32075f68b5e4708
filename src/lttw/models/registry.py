"""One interface for every neural classifier of the pipeline, and symmetric save / load.

A classifier is an ``nn.Module`` with a config dataclass (``config_class``), registered under
its ``model.variant`` name. Every classifier takes the same batch:

    input_ids       (batch, seq)        int64   encoder token ids
    attention_mask  (batch, seq)        int64   1 for real tokens, 0 for padding
    factors         (batch, k+s, rank)  float32 latent-factor rows, or None

and returns logits (batch, n_labels). A model folder holds ``config.json`` (variant + config)
and ``model.safetensors``; loading needs neither the hub nor pickle.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from lttw.io import atomic_path, sort_safetensors_metadata, write_json

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"

MODEL_REGISTRY: dict[str, type["Classifier"]] = {}


def register(name: str):
    """Class decorator: make a classifier available as ``model.variant: name``."""

    def wrap(cls):
        cls.variant = name
        MODEL_REGISTRY[name] = cls
        return cls

    return wrap


class Classifier(nn.Module):
    """Base class: subclasses set ``config_class`` and implement ``from_settings``/``forward``."""

    variant: ClassVar[str]
    config_class: ClassVar[type]

    def __init__(self, config):
        super().__init__()
        self.config = config

    @classmethod
    def from_settings(cls, model, n_labels: int, factor_shape: tuple[int, int] | None,
                      encoder_path: str | None) -> "Classifier":
        """Build a fresh model from ``ModelSettings``. ``encoder_path`` is a resolved local
        folder (or hub name) whose pretrained weights are loaded here; ``factor_shape`` is
        (k+s, rank) when latent factors are fused, else None."""
        raise NotImplementedError

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                factors: torch.Tensor | None = None) -> torch.Tensor:
        raise NotImplementedError

    def auxiliary_loss(self) -> torch.Tensor | None:
        """A term the training loop adds to the cross-entropy (None: nothing), e.g. LEAM's
        label regulariser; computed from the parameters alone, once per step."""
        return None

    # parameter groups for the optimiser: pretrained weights ("encoder") vs new ("head")
    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        enc = [p for n, p in self.named_parameters() if n.startswith("encoder.")]
        rest = [p for n, p in self.named_parameters() if not n.startswith("encoder.")]
        return {"encoder": enc, "head": rest}


def config_to_dict(config) -> dict[str, Any]:
    return dataclasses.asdict(config)


def save_model(model: Classifier, folder: str | Path) -> None:
    """Write ``config.json`` and ``model.safetensors`` (atomically, each)."""
    from safetensors.torch import save_model as save_weights

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / WEIGHTS_NAME) as tmp:
        save_weights(model, str(tmp))  # handles tied / shared tensors
        sort_safetensors_metadata(tmp)  # identical weights -> identical bytes
    write_json(folder / CONFIG_NAME, {"variant": model.variant,
                                      "config": config_to_dict(model.config)})


def read_model_config(folder: str | Path) -> tuple[str, dict]:
    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no model config here (is {folder} a model folder?)")
    raw = json.loads(path.read_text(encoding="utf-8"))
    return raw["variant"], raw["config"]


def load_model(folder: str | Path, map_location: str | torch.device = "cpu") -> Classifier:
    """Rebuild the model from its config alone (no hub access) and load its weights."""
    from safetensors.torch import load_model as load_weights

    from lttw import models  # noqa: F401  (registers every variant)

    variant, cfg = read_model_config(folder)
    if variant not in MODEL_REGISTRY:
        raise ValueError(f"{folder}: unknown model variant {variant!r}; "
                         f"known: {', '.join(sorted(MODEL_REGISTRY))}")
    cls = MODEL_REGISTRY[variant]
    model = cls(cls.config_class(**cfg))
    load_weights(model, str(Path(folder) / WEIGHTS_NAME), device=str(map_location))
    model.eval()
    return model
