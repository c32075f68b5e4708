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

Each variant module of ``lttw.models`` registers itself, and this module imports them all
(``_import_variants``, at its end), so any import of the registry completes it; the model
folder's torch-free modules (``bundle`` and the others of ``SUPPORT``) are not variants.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar, cast

import torch
from torch import nn

from lttw.errors import UserError, one_line
from lttw.io import atomic_path, sort_safetensors_metadata, write_json
from lttw.models.bundle import read_model_config
from lttw.models.files import CONFIG_NAME, WEIGHTS_NAME
from lttw.models.registrar import registrar

#: modules of ``lttw.models`` that support the variants rather than define one
SUPPORT = {"attention", "bundle", "fusion", "registrar", "registry", "tfidf", "tfidf_vectorizer"}

MODEL_REGISTRY: dict[str, type[Classifier]] = {}


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


def load_model(
    folder: str | Path,
    map_location: str | torch.device = "cpu",
    config: tuple[str, dict] | None = None,
) -> Classifier:
    """Rebuild the model from its config alone (no hub access) and load its weights.
    ``config``: config.json's ``(variant, config)`` where the caller read it already."""
    variant, cfg = config if config is not None else read_model_config(folder)
    weights = Path(folder) / WEIGHTS_NAME
    if not weights.is_file():
        raise FileNotFoundError(2, "no model weights here", str(weights))
    return model_from_bytes(variant, cfg, weights.read_bytes(), Path(folder)).to(map_location)


def model_from_bytes(variant: str, cfg: dict, weights: bytes, folder: Path) -> Classifier:
    """The ``variant`` model of config ``cfg`` with the safetensors ``weights`` (bytes read
    from ``folder``, named in messages), on the CPU, in eval mode. Every tensor of the file
    must fit a parameter of the model and every parameter must get one (tensors that the
    file stores once for parameters that share them, as ``safetensors.torch.save_model``
    writes them, count for each)."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    config_path, where = folder / CONFIG_NAME, folder / WEIGHTS_NAME
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
    try:
        state = load(weights)
    except SafetensorError as err:
        raise UserError(
            f"{where}: not a readable safetensors file, truncated or damaged "
            f"({one_line(err, lines=2, limit=300)})"
        ) from None
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as err:  # wrong shapes
        raise UserError(
            f"{where}: the weights do not fit {config_path} ({one_line(err, lines=2, limit=300)})"
        ) from None
    tied = _tied_names(model)
    left = {name for name in missing if not any(other in state for other in tied[name])}
    if left or unexpected:
        names = sorted(left) or sorted(unexpected)
        what = "missing" if left else "not of this model"
        raise UserError(
            f"{where}: the weights do not fit {config_path} ({len(names)} tensor(s) "
            f"{what}: {', '.join(names[:3])})"
        )
    model.eval()
    return model


def _tied_names(model) -> dict[str, list[str]]:
    """Each state-dict name -> the names sharing its storage (itself included): the file holds
    such a tensor once, under one of them (``safetensors.torch.save_model``)."""
    by_storage: dict[object, list[str]] = {}
    for name, tensor in model.state_dict().items():
        key = tensor.data_ptr() if tensor.numel() else name
        by_storage.setdefault(key, []).append(name)
    return {name: names for names in by_storage.values() for name in names}


def _import_variants() -> None:
    """Import every variant module of the package (each registers itself on import)."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name not in SUPPORT:
            importlib.import_module(f"lttw.models.{module.name}")


_import_variants()
