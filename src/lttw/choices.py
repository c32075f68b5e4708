"""The one list of each named choice, as plain ``typing.Literal`` types (no pydantic):
``lttw.settings`` validates parameters with them and the CLI offers them as option values, so
``lttw --help`` stays fast and neither re-types the other's list."""

from typing import Literal

Variant = Literal[
    "lttw",
    "encoder",
    "encoder_cnn",
    "transformer",
    "bilstm_attention",
    "leam",
    "tfidf_linear",
    "lttw_tfidf",
]
Fusion = Literal["concat", "sequence", "none"]
Attention = Literal["linformer", "mha", "none"]
Ranking = Literal["count_then_corpus", "count_then_alpha", "first_occurrence"]
Sampling = Literal["balanced", "stratified", "all"]
Device = Literal["auto", "cpu", "cuda"]
Backend = Literal[
    "auto", "torch", "onnx"
]  # lttw serve: onnxruntime where the folder has model.onnx
Engine = Literal["local", "ray"]  # lttw predict --engine
Runner = Literal["dvc", "direct"]  # lttw exp run --runner
Profile = Literal["quick", "default", "paper"]  # lttw init --profile (lttw.profiles)
