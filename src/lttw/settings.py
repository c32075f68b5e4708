"""Typed, validated pipeline settings: the one place where parameters are checked.

Stages read ``params.yaml`` themselves and pass the relevant group in; the library
functions take these typed objects (or plain values), never the YAML file.
Every bad value is rejected at load time with the parameter's dotted name and its
valid range, before any stage does work.
"""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import Annotated, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lttw.choices import Attention, Device, Fusion, Ranking, Sampling, Variant
from lttw.errors import UserError

#: the choices (lttw.choices) as tuples of names; every other module takes them from here
VARIANTS: tuple[str, ...] = get_args(Variant)
FUSIONS: tuple[str, ...] = get_args(Fusion)
ATTENTIONS: tuple[str, ...] = get_args(Attention)
RANKINGS: tuple[str, ...] = get_args(Ranking)

#: variants whose inputs include the latent-factor tensor (when fusion != none)
FACTOR_VARIANTS = {"lttw"}
#: variants that can embed the counts stage's words instead of encoder tokens (model.vocab)
WORD_VOCAB_VARIANTS = {"bilstm_attention", "transformer", "leam"}
#: variants that read the pretrained encoder's last hidden states (train.freeze_encoder can
#: cache them: the encode stage)
ENCODER_VARIANTS = {"lttw", "encoder", "encoder_cnn"}
#: variants that need no tokenizer / torch at all
NON_NEURAL_VARIANTS = {"tfidf_linear"}
#: every variant but LTTW: the comparators of the paper's Table 4 (``make baselines``)
BASELINES = tuple(v for v in VARIANTS if v not in FACTOR_VARIANTS)


#: counts.token_pattern's default: runs of unicode word characters (within jieba's words /
#: around CJK characters); lttw.text.words and tfidf_linear take it from here
DEFAULT_TOKEN_PATTERN = r"(?u)\b\w+\b"

#: the largest seed every consumer accepts (numpy's legacy RandomState, used by scikit-learn)
MAX_SEED = 2**32 - 1


class _Group(BaseModel):
    # allow_inf_nan: a float parameter is a finite number (.inf / .nan in YAML are rejected)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DataSettings(_Group):
    dataset: str = "ag_news"
    root: str = "../shared/datasets"
    text_column: str | None = None  # None: the manifest's (or "text")
    label_column: str | None = None  # None: the manifest's (or "label")
    train_size: int = Field(5000, ge=1)
    test_size: int = Field(1000, ge=0)
    # 0: no predict sample; with sampling: all the test sample is then the whole test split
    predict_size: int = Field(1000, ge=0)
    use_splits: bool = True  # draw test/predict from the dataset's test split when it has one
    # balanced: size // p rows per class (the paper); stratified: the class proportions at the
    # given sizes; all: every row (sizes ignored but for their ratio; see lttw.data.sample_sizes)
    sampling: Sampling = "balanced"


class FoldSettings(_Group):
    n_folds: int = Field(10, ge=3, le=100)
    run: list[int] = Field(default_factory=lambda: [0], min_length=1)

    @model_validator(mode="after")
    def _folds_in_range(self) -> FoldSettings:
        bad = [f for f in self.run if not 0 <= f < self.n_folds]
        if bad:
            raise ValueError(f"folds.run has {bad}: each fold must be in 0..{self.n_folds - 1}")
        if len(set(self.run)) != len(self.run):
            raise ValueError(f"folds.run {self.run} repeats a fold")
        return self


class WordSettings(_Group):
    # how texts are split into words for every consumer of words (counts, features,
    # tfidf_linear, explain, prediction): lttw.text.words; auto is resolved once, by the
    # counts stage (the dataset manifest's language, else the texts' share of CJK letters)
    splitter: Literal["auto", "regex", "jieba", "char"] = "auto"


class CountSettings(_Group):
    # the word pattern of every splitting rule (lttw.text.words: a valid regex, <= 1 group)
    token_pattern: str = DEFAULT_TOKEN_PATTERN
    lowercase: bool = True
    min_count: int = Field(1, ge=1)


class NMFSettings(_Group):
    # auto: the number of classes where that is above the paper's 5, else 5
    # (lttw.factors.nmf.resolve_rank)
    rank: Annotated[int, Field(ge=1, le=1000)] | Literal["auto"] = "auto"
    max_iter: int = Field(400, ge=1)
    init: Literal["nndsvd", "nndsvda", "nndsvdar", "random"] = "nndsvda"
    tol: float = Field(1e-4, gt=0)


class ModelSettings(_Group):
    variant: Variant = "lttw"
    encoder: str = "sentence-transformers/all-MiniLM-L6-v2"
    max_len: int = Field(64, ge=8, le=8192)
    # top-k / bottom-s words; auto: half the fold's mean distinct words a text, at most the
    # paper's 10 (lttw.factors.features.resolve_slots)
    k: Annotated[int, Field(ge=0, le=1000)] | Literal["auto"] = "auto"
    s: Annotated[int, Field(ge=0, le=1000)] | Literal["auto"] = "auto"
    ranking: Ranking = "count_then_corpus"
    # training rows' factors: out_of_fold (cross-fitted, as an unseen text would get them) or
    # in_sample (the paper, literally: looked up in counts that include the text's own label)
    train_factors: Literal["out_of_fold", "in_sample"] = "out_of_fold"
    factor_splits: int = Field(5, ge=2, le=50)  # groups for out_of_fold
    fusion: Fusion = "concat"
    attention: Attention = "linformer"
    linformer_k: int = Field(32, ge=1)
    share_kv: bool = True
    depth: int = Field(1, ge=1, le=24)
    heads: int = Field(4, ge=1)
    ffn_mult: int = Field(4, ge=1)
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    # baselines; ignored by variants that do not use them
    pooling: Literal["cls", "mean"] = "cls"
    hidden: int = Field(256, ge=8)
    layers: int = Field(2, ge=1)
    # checked where it is used (models/encoder_cnn.py: a non-empty list of widths >= 1)
    cnn_widths: list[int] = Field(default_factory=lambda: [2, 3, 4])
    cnn_channels: int = Field(128, ge=1)
    pretrained_embeddings: bool = True
    leam_r: int = Field(2, ge=0)
    # bilstm_attention / transformer / leam: embed encoder tokens (encoder) or the counts
    # stage's words split by words.splitter (words; lttw.text.word_ids); other variants ignore it
    vocab: Literal["encoder", "words"] = "encoder"
    # with vocab: words, pretrained static vectors (word2vec text format, .vec / .vec.gz) for
    # the embedding; null: the dataset manifest's word_vectors, else random (lttw.text.vectors)
    word_vectors: str | None = None
    # encoder-backed variants: add what the encoder reads as [UNK] in the training sample to
    # its vocabulary (auto: where over 10% of the tokens are [UNK]; lttw.text.encoder_vocab)
    extend_vocab: bool | Literal["auto"] = "auto"
    # tfidf_linear: svm measured better than logistic on AG News and THUCNews (README)
    linear_model: Literal["logistic", "svm"] = "svm"

    @model_validator(mode="after")
    def _factor_slots(self) -> ModelSettings:
        if self.uses_factors and self.k == 0 and self.s == 0:
            raise ValueError(
                "model.k + model.s must be >= 1 when latent factors are fused "
                "(set model.fusion: none to run without them)"
            )
        return self

    @model_validator(mode="after")
    def _vectors_need_words(self) -> ModelSettings:
        if self.word_vectors is not None and self.vocab != "words":
            raise ValueError(
                "model.word_vectors needs model.vocab: words (the vectors embed "
                "the counts stage's words, not encoder tokens)"
            )
        if self.word_vectors is not None and not self.word_vectors.strip():
            raise ValueError("model.word_vectors is empty: give a path or null")
        return self

    @property
    def uses_word_vocab(self) -> bool:
        return self.vocab == "words" and self.variant in WORD_VOCAB_VARIANTS

    @property
    def uses_factors(self) -> bool:
        return self.variant in FACTOR_VARIANTS and self.fusion != "none"


class TrainSettings(_Group):
    device: Device = "auto"
    bf16: bool = True  # autocast to bf16 where the device supports it
    compile: bool = False
    # the budget adapts to the data: `epochs` epochs, more where that is fewer than `min_steps`
    # optimiser steps (a small train part), but no more than `max_epochs` for that reason;
    # `patience` stops early
    epochs: int = Field(2, ge=1, le=1000)
    min_steps: int = Field(200, ge=0)
    max_epochs: int = Field(20, ge=1, le=1000)
    batch_size: int = Field(32, ge=1)
    group_by_length: bool = False  # batches of similar lengths (less padding; see batching.py)
    eval_batch_size: int = Field(128, ge=1)
    lr: float = Field(1e-4, gt=0, lt=1)
    head_lr: float | None = Field(1e-3, gt=0, lt=1)  # None: same as lr
    weight_decay: float = Field(0.01, ge=0)
    warmup_ratio: float = Field(0.06, ge=0, lt=1)
    grad_clip: float = Field(1.0, ge=0)  # 0 disables clipping
    patience: int = Field(2, ge=0)  # epochs without validation gain before stopping (0: never)
    # at the planned end, an epoch that raised validation F1 by at least this over the best
    # before it means "still rising": training goes on, one epoch at a time, up to max_epochs
    min_gain: float = Field(0.01, ge=0, le=1)
    max_steps: int = Field(0, ge=0)  # 0: no cap (tests use a small cap)
    log_every: int = Field(20, ge=1)
    num_threads: int = Field(0, ge=0)  # 0: torch's default
    distributed: Literal["auto", "off"] = "auto"
    # true: the pretrained encoder is not trained; its hidden states are computed once (the
    # encode stage, cached by DVC) and only the new layers train: fast sweeps, another model
    freeze_encoder: bool = False


class FinalSettings(_Group):
    # true: the final stage retrains model.variant on every labelled row of the train sample
    # for the folds' chosen epoch count (lttw.training.final); false: models/final is the
    # first fold's model (this repository's paper profile; `lttw init` projects set true)
    enabled: bool = False


class Settings(_Group):
    seed: int = Field(42, ge=0, le=MAX_SEED)
    data: DataSettings = DataSettings()
    folds: FoldSettings = FoldSettings()
    words: WordSettings = WordSettings()
    counts: CountSettings = CountSettings()
    nmf: NMFSettings = NMFSettings()
    model: ModelSettings = ModelSettings()
    train: TrainSettings = TrainSettings()
    final: FinalSettings = FinalSettings()

    @model_validator(mode="after")
    def _frozen_encoder_variant(self) -> Settings:
        if self.train.freeze_encoder and self.model.variant not in ENCODER_VARIANTS:
            raise ValueError(
                f"train.freeze_encoder: true needs a variant with a pretrained "
                f"encoder ({', '.join(sorted(ENCODER_VARIANTS))}); "
                f"model.variant is {self.model.variant!r}"
            )
        return self


class SettingsError(UserError, ValueError):
    """A parameter is missing, unknown or out of range; the message names it."""


def _field(loc: tuple) -> tuple[type[BaseModel] | None, object]:
    """The model that holds the parameter at ``loc`` and its FieldInfo (None where unknown);
    list indices in ``loc`` select the list's item constraints."""
    model: type[BaseModel] | None = Settings
    info = None
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        info = model.model_fields.get(part)
        if info is None:
            return model, None
        ann = info.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return model, info


_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


def valid_range(dotted: str, metadata) -> str | None:
    """``1 <= model.depth <= 24``-style description of numeric bounds (None: no bounds)."""
    lower = upper = None
    for item in metadata:
        for kind, attr, op in _BOUNDS:
            if isinstance(item, kind):
                if attr in ("ge", "gt"):
                    lower = f"{getattr(item, attr)} {'<=' if attr == 'ge' else '<'} "
                else:
                    upper = f" {op} {getattr(item, attr)}"
    if lower is None and upper is None:
        return None
    return f"{lower or ''}{dotted}{upper or ''}"


def _union_metadata(annotation) -> list:
    """The constraints of a union's constrained member (``Annotated[int, Field(ge=1)] | ...``)."""
    if get_origin(annotation) not in (Union, UnionType):
        return []
    found = [m for a in get_args(annotation) for m in getattr(a, "__metadata__", ())]
    return [c for m in found for c in getattr(m, "metadata", [m])]


def _hint(loc: tuple, err_type: str) -> str:
    """What is valid at ``loc``: the known names (unknown parameter) or the numeric range."""
    dotted = ".".join(str(p) for p in loc if not isinstance(p, int))
    holder, info = _field(loc)
    if err_type == "extra_forbidden":
        known = sorted(holder.model_fields) if holder is not None else []
        return f"; known names: {', '.join(known)}" if known else ""
    if info is None:
        return ""
    metadata = list(info.metadata) or _union_metadata(info.annotation)
    item_index = [p for p in loc if isinstance(p, int)]
    if item_index:  # an item of a list: its own constraints
        args = getattr(info.annotation, "__args__", ())
        metadata = [m for a in args for m in getattr(a, "__metadata__", ())]
        metadata = [c for m in metadata for c in getattr(m, "metadata", [m])]
        dotted = f"{dotted}[{item_index[0]}]"
    described = valid_range(dotted, metadata)
    return f"; valid: {described}" if described else ""


def _field_loc(loc: tuple) -> tuple:
    """``loc`` without pydantic's union-member tags (``nmf.rank.constrained-int`` -> ``nmf.rank``)."""
    model: type[BaseModel] | None = Settings
    kept = []
    for part in loc:
        if isinstance(part, int):
            kept.append(part)
        elif model is not None:  # a field (or an unknown name) of a group; below a leaf field
            kept.append(part)  # only union-member tags follow
            info = model.model_fields.get(part)
            ann = info.annotation if info is not None else None
            model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return tuple(kept)


def _format(err: ValidationError, source: str) -> str:
    """One line per parameter: a union's members' complaints (``nmf.rank``: a number in
    range or 'auto') are joined into one."""
    grouped: dict[tuple, list[dict]] = {}
    for e in err.errors():
        grouped.setdefault(_field_loc(tuple(e["loc"])), []).append(e)
    lines = []
    for loc, errors in grouped.items():
        e = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        where = where.removeprefix(".") or "(top level)"
        msgs = [x["msg"].removeprefix("Value error, ") for x in errors]
        msg = " or ".join([msgs[0]] + [m.removeprefix("Input should be ") for m in msgs[1:]])
        if e["type"] == "extra_forbidden":
            msg = "unknown parameter"
        quiet = e["type"] in ("missing", "extra_forbidden") or isinstance(e.get("input"), dict)
        got = "" if quiet else f" (got {e.get('input')!r})"
        lines.append(f"{source}: {where}: {msg}{got}{_hint(loc, e['type'])}")
    return "\n".join(lines)


def settings_from_dict(raw: dict, source: str = "params") -> Settings:
    try:
        return Settings.model_validate(raw or {})
    except ValidationError as err:
        raise SettingsError(_format(err, source)) from None


def check_batch_size(n_train: int, batch_size: int, fold: int | None = None) -> None:
    """Reject ``train.batch_size`` larger than the rows it batches (call it where the data is
    known: at the start of training, with the fold's train-part size).

    An error rather than a silent clamp: the batch size is part of the experiment (it sets the
    steps per epoch and the learning-rate schedule), so the run must not quietly use another.
    """
    if n_train < 1:
        where = f"fold {fold}'s" if fold is not None else "the"
        raise SettingsError(
            f"{where} train part is empty: nothing to train on (raise data.train_size)"
        )
    if batch_size > n_train:
        where = f"fold {fold}'s train part" if fold is not None else "the train part"
        raise SettingsError(
            f"train.batch_size={batch_size} is larger than {where} "
            f"({n_train} rows); valid: 1 <= train.batch_size <= {n_train} "
            "(or raise data.train_size)"
        )


def read_settings(path: str | Path = "params.yaml") -> Settings:
    path = Path(path)
    if not path.is_file():
        raise SettingsError(f"{path}: parameters file not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise SettingsError(f"{path}: not valid YAML: {err}") from None
    if raw is not None and not isinstance(raw, dict):
        raise SettingsError(f"{path}: expected a mapping of parameter groups")
    return settings_from_dict(raw, str(path))
