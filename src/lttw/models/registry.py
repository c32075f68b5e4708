"""One interface for every neural classifier of the pipeline, and symmetric save / load.

A classifier is an ``nn.Module`` with a config dataclass (``config_class``), registered under
its ``model.variant`` name. Every classifier takes the same batch:

    input_ids       (batch, seq)        int64   encoder token ids
    attention_mask  (batch, seq)        int64   1 for real tokens, 0 for padding
    factors         (batch, k+s, rank)  float32 latent-factor rows, or None

and returns logits (batch, n_labels). Variants over a pretrained encoder (lttw, encoder,
encoder_cnn) also take ``encoder_states`` (batch, seq, d): the frozen encoder's cached
output, used instead of running the encoder (``train.freeze_encoder``). A model folder holds ``config.json`` (variant + config)
and ``model.safetensors``; loading needs neither the hub nor pickle.

Each variant module of ``lttw.models`` registers itself, and the package imports them all
(``lttw/models/__init__.py``), so any import from ``lttw.models`` completes the registry.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar, cast

import torch
from torch import nn

from lttw.errors import UserError, one_line
from lttw.io import atomic_path, read_json, sort_safetensors_metadata, write_json

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"

MODEL_REGISTRY: dict[str, type[Classifier]] = {}


def registrar(table: dict[str, type], attribute: str):
    """A class decorator maker: ``@it(name)`` files the class under ``name`` in ``table``
    and sets its ``attribute`` to ``name``."""

    def register_as(name: str):
        def wrap(cls):
            setattr(cls, attribute, name)
            table[name] = cls
            return cls

        return wrap

    return register_as


#: class decorator: ``@register(name)`` makes a classifier available as ``model.variant: name``
register = registrar(MODEL_REGISTRY, "variant")


class Classifier(nn.Module):
    """Base class: subclasses set ``config_class`` and implement ``from_settings``/``forward``."""

    variant: ClassVar[str]
    config_class: ClassVar[type]
    #: trains on multi-label data (one logit per class, binary cross-entropy); a variant
    #: that cannot sets False and the train stage refuses it (``training.losses``)
    supports_multi_label: ClassVar[bool] = True

    def __init__(self, config):
        super().__init__()
        self.config = config

    @classmethod
    def from_settings(
        cls, model, n_labels: int, factor_shape: tuple[int, int] | None, encoder_path: str | None
    ) -> Classifier:
        """Build a fresh model from ``ModelSettings``. ``encoder_path`` is a resolved local
        folder (or hub name) whose pretrained weights are loaded here; ``factor_shape`` is
        (k+s, rank) when latent factors are fused, else None."""
        raise NotImplementedError

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        factors: torch.Tensor | None = None,
    ) -> torch.Tensor:
        raise NotImplementedError

    def hidden_states(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        encoder_states: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The encoder's last hidden states (B, n, d) (H_BERT), or the cached states of a
        frozen encoder (``train.freeze_encoder``; the encode stage) when given."""
        if encoder_states is not None:
            return encoder_states
        encoder = cast(nn.Module, self.encoder)  # set by the subclasses that read an encoder
        return encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

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
    write_json(
        folder / CONFIG_NAME, {"variant": model.variant, "config": config_to_dict(model.config)}
    )


def refuse_remote_code(path: str | Path, document: Any) -> None:
    """Raise a UserError naming ``path`` when its JSON ``document`` holds an ``auto_map``
    (code shipped with a model, which transformers would import): never run here."""
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "auto_map" in node:
                raise UserError(
                    f"{path}: asks to run code shipped with the model (auto_map); "
                    "lttw never runs such code: remove the auto_map entry"
                )
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def read_model_config(folder: str | Path) -> tuple[str, dict]:
    """``(variant, config)`` from ``config.json``; a damaged file raises a UserError naming it."""
    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no model config here (is {folder} a model folder?)")
    raw = read_json(path)
    if not (
        isinstance(raw, dict)
        and isinstance(raw.get("variant"), str)
        and isinstance(raw.get("config"), dict)
    ):
        raise UserError(f"{path}: not a model config (needs 'variant' and a 'config' object)")
    refuse_remote_code(path, raw)
    return raw["variant"], raw["config"]


def load_model(folder: str | Path, map_location: str | torch.device = "cpu") -> Classifier:
    """Rebuild the model from its config alone (no hub access) and load its weights."""
    from safetensors import SafetensorError
    from safetensors.torch import load_model as load_weights

    variant, cfg = read_model_config(folder)
    config_path, weights = Path(folder) / CONFIG_NAME, Path(folder) / WEIGHTS_NAME
    if variant not in MODEL_REGISTRY:
        raise UserError(
            f"{config_path}: unknown model variant {variant!r}; "
            f"known: {', '.join(sorted(MODEL_REGISTRY))}"
        )
    cls = MODEL_REGISTRY[variant]
    try:
        model = cls(cls.config_class(**cfg))
    except (TypeError, ValueError, KeyError) as err:
        raise UserError(
            f"{config_path}: not a valid {variant} config ({one_line(err, lines=2, limit=300)})"
        ) from None
    if not weights.is_file():
        raise FileNotFoundError(2, "no model weights here", str(weights))
    try:
        load_weights(model, str(weights), device=str(map_location))
    except SafetensorError as err:
        raise UserError(
            f"{weights}: not a readable safetensors file, truncated or damaged "
            f"({one_line(err, lines=2, limit=300)})"
        ) from None
    except RuntimeError as err:  # missing / unexpected tensors, wrong shapes
        raise UserError(
            f"{weights}: the weights do not fit {config_path} ({one_line(err, lines=2, limit=300)})"
        ) from None
    model.eval()
    return model
