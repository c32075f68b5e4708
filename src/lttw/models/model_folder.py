"""A trained model folder, read and checked once (``ModelFolder.open``), described by a
typed value that every backend (torch, TF-IDF, ONNX, ensemble) is built from.

``open`` resolves the location (``hub_snapshot``) and reads the folder once
(``folder_reader.read_folder``): lttw.json's keys present and in their ranges, its precision
one this lttw runs (``bundle.check_meta``), every file any part reads held to its size limit, read into
memory, present and as recorded by the checksums (lttw.json's settings and an ensemble's
parts included; a part holding a file its loader does not read fails). ``ModelFolder``
then describes those bytes, never reading the path again:

- labels.json: two or more distinct class names (``bundle.read_classes``);
- the settings against the weights' config (``check_settings``): k + s against the fusion's
  factor rows, ``max_len`` against the classifier's sequence length and the encoder's
  position embeddings (an ONNX export keeps the config it was traced from);
- the tokenizer's JSON files ask to run no code;
- the word rules (lttw.json's ``words`` and ``counts``, ``factors/`` and ``words/``): each
  pattern compiled once with a bound on its cost (``text.pattern_cost``).

What the backends read: config.json (``config``, ``config_variant``), calibration.json
checked against lttw.json (``calibration``), the word vocabulary of ``words/``
(``vocabulary``) or the tokenizer (``tokenizer``), and the rest of the bytes (``files``:
weights, ONNX graph, factor tables), which ``inference.predict.Predictor`` builds its
classifier from, never from the path.

Every problem is one ``UserError`` line naming the file. File names: ``lttw.models.files``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lttw.errors import UserError
from lttw.models.bundle import (
    model_config,
    read_classes,
    refuse_remote_code,
)
from lttw.models.calibration import checked_calibration
from lttw.models.ensemble import ENSEMBLE_PARTS, EnsembleWeights
from lttw.models.files import (
    CALIBRATION,
    CONFIG_NAME,
    ENSEMBLE_FILE,
    FACTORS,
    LABELS,
    META,
    ONNX_FILE,
    TOKENIZER,
    WORDS,
)
from lttw.models.folder_files import record_first_checksums
from lttw.models.folder_reader import FolderCheck, FolderFiles, read_folder, verify
from lttw.models.hub_snapshot import resolve_model_location
from lttw.models.trained import TOKENS, variant_reads
from lttw.text.pattern_cost import check_pattern_cost
from lttw.text.words import WORDS_FILE


class ModelFolder:
    """What a checked model folder holds: ``path`` (named in messages), ``meta``
    (lttw.json), ``classes``, the classifier's ``variant`` and ``config`` (config.json's
    ``config``; {} for an ensemble) with ``config_variant`` (its ``variant``), whether it
    runs from ``model.onnx`` (``onnx``), its ``calibration``, what turns texts into ids
    (``vocabulary``: a ``WordVocabulary``, or ``tokenizer``; neither for a model of texts or
    an ensemble), an ensemble's ``parts`` (each a ``ModelFolder``, in weight order) with
    their ``weights``, and its ``files`` (the bytes read, for the backends)."""

    def __init__(self, files: FolderFiles):
        """The description of ``files`` (``folder_reader.read_folder``'s), checked whole."""
        self.files, self.path = files, files.root
        labels = files.json(LABELS) if files.has(LABELS) else None
        self.meta, self.classes = files.meta, read_classes(labels, files.where(LABELS))
        self.variant = str(self.meta["variant"])
        calibration = files.json(CALIBRATION) if files.has(CALIBRATION) else None
        self.calibration = checked_calibration(
            calibration, files.where(CALIBRATION), self.meta, len(self.classes)
        )
        self.config: dict = {}
        self.config_variant, self.onnx = "", False
        self.parts: tuple[ModelFolder, ...] = ()
        self.weights: EnsembleWeights | None = None
        self.vocabulary: Any = None
        self.tokenizer: Any = None
        if self.variant in ENSEMBLE_PARTS:
            self.weights = EnsembleWeights.from_dict(
                files.json(ENSEMBLE_FILE), files.where(ENSEMBLE_FILE)
            )
            self.parts = tuple(self._part(name) for name in self.weights.parts)
        else:
            self.config_variant, self.config = model_config(
                files.json(CONFIG_NAME), files.where(CONFIG_NAME)
            )
            check_settings(self.path, self.meta, self.config)
            for name in files.names(TOKENIZER):  # before the weights: no remote code
                if name.endswith(".json"):
                    refuse_remote_code(files.where(name), files.json(name))
            self.onnx = files.has(ONNX_FILE)
        check_word_rules(files)
        if not self.parts and variant_reads(self.config_variant) == TOKENS:
            self.vocabulary, self.tokenizer = _token_reader(files)

    def _part(self, name: str) -> ModelFolder:
        if not self.files.has(f"{name}/{META}"):
            raise UserError(f"{self.path / name / META}: missing (the ensemble's part {name!r})")
        part = ModelFolder(self.files.part(name))
        if part.classes != self.classes:
            raise UserError(
                f"{self.path / name / LABELS}: other classes than {self.path / ENSEMBLE_FILE}'s "
                "ensemble; the folder is damaged"
            )
        return part

    @property
    def is_ensemble(self) -> bool:
        return bool(self.parts)

    @property
    def has_onnx(self) -> bool:
        """Whether it, or one of an ensemble's parts, holds ``model.onnx``."""
        return self.onnx or any(part.onnx for part in self.parts)

    @classmethod
    def open(cls, location: str | Path, revision: str | None = None) -> ModelFolder:
        """The folder at ``location`` (a path, or a hub id at ``revision``), read once and
        checked whole (see the module docstring); a UserError naming the file otherwise."""
        path = resolve_model_location(location, revision)
        if not (path / META).is_file():
            raise UserError(
                f"{location}: not a trained model folder (no {META}); train one "
                "(`dvc repro`) or name the folder of one"
            )
        return cls(read_folder(path))


def _token_reader(files: FolderFiles) -> tuple[Any, Any]:
    """``(vocabulary, tokenizer)``: the ``WordVocabulary`` of ``words/`` where the model
    embeds words, else the saved tokenizer where it reads tokens."""
    if files.names(WORDS):
        from lttw.text.word_ids import VOCABULARY_FILE, WordVocabulary

        return WordVocabulary.from_documents(
            files.json(f"{WORDS}/{VOCABULARY_FILE}"),
            files.where(f"{WORDS}/{VOCABULARY_FILE}"),
            _rule(files, WORDS),
        ), None
    from lttw.encoder.tokenizer import tokenizer_from_files

    prefix = f"{TOKENIZER}/"
    named = {name[len(prefix) :]: files.files[name] for name in files.names(TOKENIZER)}
    if not named:
        raise FileNotFoundError(2, "no tokenizer folder here", str(files.where(TOKENIZER)))
    return None, tokenizer_from_files(named, files.where(TOKENIZER))


def _rule(files: FolderFiles, sub: str):
    """The ``WordSplitter`` recorded in ``sub/words.json`` (``text.words.read_rule``)."""
    from lttw.errors import DataError
    from lttw.text.words import WordSplitter

    name = f"{sub}/{WORDS_FILE}"
    if not files.has(name):
        raise DataError(f"{files.where(name)}: not found (the model folder is incomplete)")
    return WordSplitter.from_record(files.json(name), str(files.where(name)))


def verify_folder(folder: str | Path, record: bool = False) -> FolderCheck:
    """``lttw verify`` and ``lttw push``'s check of a local folder: every file against its
    recorded checksum (problems listed, one line each, a stray file in an ensemble's part
    among them); where they all match, its settings against its weights (a UserError).
    ``record``: the checksums of a folder that has none recorded first
    (``folder_files.record_first_checksums``)."""
    folder = Path(folder)
    if not (folder / META).is_file():
        raise UserError(f"{folder}: not a trained model folder (no {META})")
    if record:
        record_first_checksums(folder)
    found = verify(folder)
    found.problems += [
        f"{folder / name}: not a file of the ensemble's part (its loader does not read it); "
        "added after the folder was written: remove it"
        for name in found.stray
    ]
    if not found.problems:
        ModelFolder(read_folder(folder))
    return found


def _edited(path: Path, what: str) -> UserError:
    return UserError(
        f"{path / META}: {what}; the file is edited or damaged (re-export the model, or retrain)"
    )


def check_settings(path: Path, meta: dict, config: dict) -> None:
    """lttw.json's settings against config.json (what the weights were built with)."""
    slots = config.get("factor_slots")
    if meta.get("with_factors") and isinstance(slots, int):
        k, s = meta["k"], meta["s"]
        if k + s != slots:
            raise _edited(
                path, f"k + s = {k} + {s} = {k + s}, but the weights fuse {slots} factor rows"
            )
    max_len = meta.get("max_len")
    trained_len = config.get("max_len")
    if isinstance(trained_len, int) and max_len != trained_len:
        raise _edited(path, f"max_len = {max_len}, but the classifier was built for {trained_len}")
    encoder = config.get("encoder_config")
    if isinstance(encoder, dict) and isinstance(max_len, int):
        from lttw.encoder.pretrained import max_positions

        limit = max_positions(encoder)
        if limit is not None and max_len > limit:
            raise _edited(path, f"max_len = {max_len}, but the encoder has {limit} positions")


def check_word_rules(files: FolderFiles) -> None:
    """Every word pattern the folder records, compiled once with a bound on its cost."""
    found = []
    for key in ("words", "counts"):
        record = files.meta.get(key)
        if isinstance(record, dict) and "token_pattern" in record:
            found.append((record["token_pattern"], f"{files.where(META)}: {key}.token_pattern"))
    for sub in (FACTORS, WORDS):
        name = f"{sub}/{WORDS_FILE}"
        if files.has(name):
            record = files.json(name)
            if isinstance(record, dict) and "token_pattern" in record:
                found.append((record["token_pattern"], f"{files.where(name)}: token_pattern"))
    for pattern, where in found:
        check_pattern_cost(pattern, where)
