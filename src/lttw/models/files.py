"""Every file name of a trained model folder, in one place (read and checked once by
``lttw.models.model_folder.ModelFolder``)::

    lttw.json            what prediction needs: variant, max_len, k, s, ranking, the word
                         rule, fold, seed, precision, and the sha256 of every file read
    labels.json          class names in label-id order
    config.json          the classifier's variant and config (a torch or tf-idf model)
    model.safetensors    its weights (none in an ONNX export)
    vocabulary.json      tfidf_linear's vocabulary
    calibration.json     a temperature, or a multi-label folder's thresholds
    ensemble.json        an ensemble's parts and weights (each part a model folder)
    model.onnx, onnx.json    the ONNX export and its record (``lttw export --onnx``)
    README.md, metrics.json  the model card and its figures
    tokenizer/           the encoder's tokenizer
    words/               the word vocabulary and rule of a ``model.vocab: words`` model
    factors/             the fold's vocabulary, word counts and NMF factors

Top level: imported by the model code, the card, the training stages and the server alike,
without importing any of them.
"""

from __future__ import annotations

META = "lttw.json"
LABELS = "labels.json"
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
TFIDF_VOCABULARY = "vocabulary.json"
CALIBRATION = "calibration.json"
ENSEMBLE_FILE = "ensemble.json"
ONNX_FILE = "model.onnx"
#: what the ONNX export recorded: precision (fp32 | int8), opset, inputs, its check's figures
ONNX_RECORD = "onnx.json"
CARD = "README.md"
METRICS = "metrics.json"
TOKENIZER = "tokenizer"
WORDS = "words"
FACTORS = "factors"
#: the key of lttw.json holding ``{relative path: sha256}``
CHECKSUMS = "sha256"
