"""The largest file of each kind a model folder may hold, checked before the file is read.

Loading a model folder reads its JSON files whole (``json.loads``, the tokenizer library's
``tokenizer.json``) and its weights into memory; a file far larger than any real one (a
damaged copy, a hostile folder) would cost its size in memory or more before anything could
say it is wrong. Every file the loader reads is held to the limit of its kind by its size on
disk (``check_size``), so the error comes first, as one line naming the file:

    weights, NMF factors, ONNX (``.safetensors``, ``.onnx``)   8 GiB
    vocabularies (``vocabulary.json``, ``vocab.txt``) and
    tokenizer files (``tokenizer/``)                           256 MiB
    every other file (lttw.json, labels.json, config.json,
    calibration.json, ensemble.json, ...)                      16 MiB

The limits sit well above the largest real files (bert-large's weights are 1.3 GB, a
250,000-token multilingual tokenizer.json about 17 MB, lttw.json a few KB).
"""

from __future__ import annotations

from pathlib import Path

from lttw.errors import UserError

MIB = 1 << 20
WEIGHTS_MAX = 8 << 30
VOCABULARY_MAX = 256 * MIB
SMALL_MAX = 16 * MIB
_WEIGHT_SUFFIXES = (".safetensors", ".onnx")
#: a model folder's tokenizer/ and words/ (``models.bundle``'s TOKENIZER and WORDS)
_VOCABULARY_FOLDERS = ("tokenizer", "words")


def size_limit(name: str) -> tuple[int, str]:
    """The most bytes the model folder's file ``name`` (a relative path) may have, and what
    kind of file that limit is for."""
    path = Path(name)
    if path.suffix in _WEIGHT_SUFFIXES:
        return WEIGHTS_MAX, "weights file"
    if path.parts[0] in _VOCABULARY_FOLDERS or path.stem in ("vocabulary", "vocab"):
        return VOCABULARY_MAX, "vocabulary or tokenizer file"
    return SMALL_MAX, "settings file"


def size_problem(path: Path, name: str) -> str | None:
    """One line naming ``path`` where it is larger than its kind's limit; else None."""
    try:
        size = path.stat().st_size
    except OSError:
        return None  # missing: the caller's own check names it
    limit, kind = size_limit(name)
    if size <= limit:
        return None
    return (
        f"{path}: {size:,} bytes, more than a model folder's {kind} may have "
        f"({limit:,}); not read: the file is damaged or not this model's (re-export the model)"
    )


def check_size(path: Path, name: str | None = None) -> None:
    """Raise ``size_problem``'s line as a UserError (``name``: the path within the model
    folder, default the file name)."""
    problem = size_problem(path, name or path.name)
    if problem:
        raise UserError(problem)
