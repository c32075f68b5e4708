"""A trained model folder that predicts on raw text by itself, with no pipeline cache:

config.json, model.safetensors   the classifier (registry.save_model), or tfidf files
tokenizer/                       the encoder's tokenizer (neural variants on encoder tokens)
words/                           vocabulary.json + words.json: the words a model with
                                 model.vocab: words embeds, and their splitting rule
labels.json                      class names in label-id order
lttw.json                        what prediction needs: variant, max_len, k, s, ranking,
                                 the word tokenisation rule, fold, seed, the inference
                                 precision, and the sha256 of every other file
                                 (``folder_files``)
factors/                         the fold's vocabulary, word counts and NMF factors
                                 (only where latent factors are fused)
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lttw.errors import UserError
from lttw.io import read_json, write_json
from lttw.models.files import CONFIG_NAME, FACTORS, LABELS, META, TOKENIZER, WORDS

if TYPE_CHECKING:
    from lttw.settings import CountSettings, ModelSettings

#: how every prediction from a model folder runs (the evaluate stage, ``lttw predict``,
#: ``explain``, ``serve``): float32 weights and activations, no bf16 autocast and no TF32,
#: on every device, so one model gives one answer; recorded in lttw.json as ``precision``
PRECISION = "fp32"


def write_model_folder(
    folder: Path,
    classes: list[str],
    model: ModelSettings,
    fold: int | str,
    *,
    counts: CountSettings,
    seed: int,
    frozen_encoder: bool = False,
    tokenizer_dir: Path | None = None,
    factor_dirs: Sequence[Path] = (),
    words=None,
    word_vocabulary=None,
    selection: dict | None = None,
    extra_meta: dict | None = None,
) -> None:
    """Add everything but the weights to a model folder being written: labels, what
    prediction needs, the tokenizer, and the files of ``factor_dirs`` (the fold's counts and
    NMF folders, where latent factors are fused). lttw.json records of the parameters the
    classifier's (``model``), the word counting's (``counts``), the ``seed``, and
    ``frozen_encoder`` (``train.freeze_encoder``) where true. ``words``: the word-splitting rule the
    model was trained with (a ``WordSplitter``), recorded in lttw.json as ``words``;
    ``word_vocabulary`` (a ``WordVocabulary``): the words the model embeds, into ``words/``;
    ``selection``: the factors' k, s and ranking, as the features stage chose them (where
    latent factors are fused); ``extra_meta``: more keys for lttw.json (the final model's
    record)."""
    with_factors = bool(factor_dirs)
    m = model
    if with_factors and selection is None:  # a folder built by hand: the settings' selection
        if "auto" in (m.k, m.s):
            raise ValueError(
                "model.k / model.s auto resolve in the features stage: a model "
                "folder built by hand needs them as numbers (or selection)"
            )
        selection = {"k": m.k, "s": m.s, "ranking": m.ranking}
    folder = Path(folder)
    write_json(folder / LABELS, {"classes": classes})
    write_json(
        folder / META,
        {
            "variant": m.variant,
            "max_len": m.max_len,
            **(selection if with_factors and selection is not None else {}),
            "counts": counts.model_dump(),
            "fold": fold,
            "seed": seed,
            "encoder": m.encoder,
            "with_factors": with_factors,
            "precision": PRECISION,
            **({"vocab": "words"} if word_vocabulary is not None else {}),
            **({"frozen_encoder": True} if frozen_encoder else {}),
            **({"words": words.record()} if words is not None else {}),
            **(extra_meta or {}),
        },
    )
    if tokenizer_dir is not None:
        shutil.copytree(tokenizer_dir, folder / TOKENIZER)
    if word_vocabulary is not None:
        word_vocabulary.save(folder / WORDS)
    if with_factors:
        (folder / FACTORS).mkdir()
        for src in factor_dirs:
            for f in sorted(Path(src).iterdir()):
                shutil.copy2(f, folder / FACTORS / f.name)


#: lttw.json keys prediction reads: always, for a tokenised (neural) model, with factors
_META_KEYS = {"variant": str, "precision": str}
_TOKEN_KEYS = {"max_len": int}
_FACTOR_KEYS = {"k": int, "s": int, "ranking": str, "counts": dict}


def _require(path: Path, doc, keys: dict[str, type]) -> None:
    for key, kind in keys.items():
        if not isinstance(doc.get(key), kind) or (kind is int and isinstance(doc[key], bool)):
            raise UserError(
                f"{path}: {key!r} is missing or not a{'n' if kind is int else ''} "
                f"{kind.__name__}; the file is damaged (re-export the model)"
            )


#: lttw.json keys that are model settings, checked against their ranges before any allocation
_RANGED_KEYS = ("variant", "max_len", "k", "s", "ranking")


def _check_ranges(path: Path, meta: dict) -> None:
    """The model settings lttw.json records, within the ranges the pipeline's typed settings
    allow (``lttw.settings.ModelSettings``): a folder edited to ``max_len`` 10**9 or ``k`` -5
    is refused in one line before a tensor is sized by it."""
    from pydantic import ValidationError

    from lttw.settings.model import ModelSettings

    recorded = {key: meta[key] for key in _RANGED_KEYS if key in meta}
    try:
        ModelSettings.model_validate(recorded)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(part) for part in first["loc"][:1]) or "?"
        raise UserError(
            f"{path}: {key} = {recorded.get(key)!r}: {first['msg'].lower()}; the file is "
            "damaged or edited (re-export the model)"
        ) from None


def check_meta(folder: Path, meta: dict) -> None:
    """lttw.json's keys that prediction reads present and in their ranges, and its
    precision one this lttw runs: a UserError naming the file and what is wrong otherwise
    (``max_len`` is needed where the model reads encoder tokens or word ids, i.e. where the
    folder has a ``tokenizer/`` or ``words/``)."""
    tokenised = (folder / TOKENIZER).is_dir() or (folder / WORDS).is_dir()
    meta_path = folder / META
    _require(
        meta_path,
        meta,
        {
            **_META_KEYS,
            **(_TOKEN_KEYS if tokenised else {}),
            **(_FACTOR_KEYS if meta.get("with_factors") else {}),
        },
    )
    _check_ranges(meta_path, meta)
    inference_precision(folder, meta)  # a value this lttw does not run, named as such


def read_classes(labels: object, labels_path: Path) -> list[str]:
    """The class names of labels.json's document ``labels`` (read from ``labels_path``;
    None: the folder has none), checked: a damaged or incomplete file raises an error
    naming it."""
    if labels is None:
        raise FileNotFoundError(2, "no class names here", str(labels_path))
    classes = labels.get("classes") if isinstance(labels, dict) else None
    if not (
        isinstance(classes, list)
        and len(classes) >= 2
        and all(isinstance(c, str) for c in classes)
        and len(set(classes)) == len(classes)
    ):
        raise UserError(
            f'{labels_path}: needs {{"classes": [...]}} with two or more '
            "distinct class names; the file is damaged"
        )
    return classes


def inference_precision(folder: str | Path, meta: dict) -> str:
    """The precision lttw.json states; any other value than ``PRECISION`` raises a UserError."""
    precision = meta["precision"]
    if precision != PRECISION:
        raise UserError(
            f"{Path(folder) / META}: precision {precision!r} is not one this lttw runs "
            f"(only {PRECISION!r}); the file is damaged or from a newer lttw"
        )
    return precision


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
    return model_config(read_json(path), path)


def model_config(raw: Any, path: Path) -> tuple[str, dict]:
    """``(variant, config)`` of config.json's document ``raw`` (read from ``path``)."""
    if not (
        isinstance(raw, dict)
        and isinstance(raw.get("variant"), str)
        and isinstance(raw.get("config"), dict)
    ):
        raise UserError(f"{path}: not a model config (needs 'variant' and a 'config' object)")
    refuse_remote_code(path, raw)
    return raw["variant"], raw["config"]
