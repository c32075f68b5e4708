"""The names of the choices (``lttw.choices``) as tuples, and which variants use what."""

from __future__ import annotations

from typing import get_args

from lttw.choices import Attention, Fusion, Ranking, Variant

#: the choices (lttw.choices) as tuples of names; every other module takes them from here
VARIANTS: tuple[str, ...] = get_args(Variant)
FUSIONS: tuple[str, ...] = get_args(Fusion)
ATTENTIONS: tuple[str, ...] = get_args(Attention)
RANKINGS: tuple[str, ...] = get_args(Ranking)

#: variants whose inputs include the latent-factor tensor (when fusion != none)
FACTOR_VARIANTS = {"lttw", "lttw_tfidf"}
#: variants that can embed the counts stage's words instead of encoder tokens (model.vocab)
WORD_VOCAB_VARIANTS = {"bilstm_attention", "transformer", "leam"}
#: variants that read the pretrained encoder's last hidden states (train.freeze_encoder can
#: cache them: the encode stage)
ENCODER_VARIANTS = {"lttw", "encoder", "encoder_cnn", "lttw_tfidf"}  # lttw_tfidf: its LTTW
#: variants that need no tokenizer / torch at all
NON_NEURAL_VARIANTS = {"tfidf_linear"}
#: ensembles of other variants, trained side by side on the same fold (models.ensemble)
ENSEMBLE_VARIANTS = {"lttw_tfidf"}
#: every variant but LTTW: the comparators of the paper's Table 4 (``make baselines``)
BASELINES = tuple(v for v in VARIANTS if v not in FACTOR_VARIANTS | ENSEMBLE_VARIANTS)

#: the ``model`` parameters each variant reads (a model card lists these, not the settings
#: of variants that were not trained); an ensemble reads those of its parts
_TOKENS = ("variant", "encoder", "max_len", "extend_vocab", "dropout")
_EMBEDDED = (*_TOKENS, "hidden", "vocab", "word_vectors")
_LTTW = (
    *_TOKENS,
    *("k", "s", "ranking", "train_factors", "factor_splits", "fusion", "attention"),
    *("linformer_k", "share_kv", "depth", "heads", "ffn_mult"),
)
MODEL_PARAMS: dict[str, tuple[str, ...]] = {
    "lttw": _LTTW,
    "encoder": _TOKENS,
    "encoder_cnn": (*_TOKENS, "cnn_widths", "cnn_channels"),
    "transformer": (*_EMBEDDED, "heads", "ffn_mult", "layers", "pooling"),
    "bilstm_attention": (*_EMBEDDED, "layers", "pretrained_embeddings"),
    "leam": (*_EMBEDDED, "leam_r", "pretrained_embeddings"),
    "tfidf_linear": ("variant", "linear_model"),
    "lttw_tfidf": (*_LTTW, "linear_model"),
}
