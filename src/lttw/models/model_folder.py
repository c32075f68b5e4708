"""A trained model folder, read and checked once (``ModelFolder.open``), described by a
typed value that every backend (torch, TF-IDF, ONNX, ensemble) is built from.

``open`` resolves the location (``hub_snapshot``), then, before any weights are read:

- lttw.json and labels.json: read, size-checked, every key prediction needs present and in
  its range (``bundle.read_model_meta``), the precision one this lttw runs;
- the files: every file any part reads held to its size limit, present and as recorded by
  the checksums (``folder_files``: lttw.json's settings and an ensemble's parts included; a
  part holding a file its loader does not read fails);
- the settings against the weights' config (``check_settings``): k + s against the fusion's
  factor rows, ``max_len`` against the classifier's sequence length and the encoder's
  position embeddings (an ONNX export keeps the config it was traced from);
- the word rules (lttw.json's ``words`` and ``counts``, ``factors/`` and ``words/``): each
  pattern compiled once with a bound on its cost (``text.pattern_cost``);
- the tokenizer's JSON files parse and ask to run no code.

Then it hands the backends what they read, each file read once: config.json (``config``,
``config_variant``), calibration.json checked against lttw.json (``calibration``), the
word vocabulary of ``words/`` (``vocabulary``) or the tokenizer (``tokenizer``). The
backends (``inference.loading``) build their classifier from these, never from the path.

Every problem is one ``UserError`` line naming the file. File names: ``lttw.models.files``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lttw.errors import UserError
from lttw.io import read_json
from lttw.models.bundle import (
    check_tokenizer_folder,
    inference_precision,
    read_model_config,
    read_model_meta,
)
from lttw.models.calibration import Calibration, checked_calibration
from lttw.models.ensemble import ENSEMBLE_PARTS, EnsembleWeights
from lttw.models.file_limits import check_size
from lttw.models.files import ENSEMBLE_FILE, FACTORS, META, ONNX_FILE, TOKENIZER, WORDS
from lttw.models.folder_check import FolderCheck, check_folder, verify
from lttw.models.hub_snapshot import resolve_model_location
from lttw.models.trained import TOKENS, variant_reads
from lttw.text.pattern_cost import check_pattern_cost
from lttw.text.words import WORDS_FILE


@dataclass(frozen=True)
class ModelFolder:
    """What a checked model folder holds: ``meta`` (lttw.json), ``classes``, the
    classifier's ``variant`` and ``config`` (config.json's ``config``; {} for an ensemble)
    with ``config_variant`` (its ``variant``), whether it runs from ``model.onnx``, its
    ``calibration``, what turns texts into ids (``vocabulary``: a ``WordVocabulary``, or
    ``tokenizer``; neither for a model of texts or an ensemble), and an ensemble's
    ``parts`` (each a ``ModelFolder``, in weight order) with their ``weights``."""

    path: Path
    meta: dict
    classes: list[str]
    variant: str
    config: dict
    onnx: bool = False
    parts: tuple[ModelFolder, ...] = ()
    weights: EnsembleWeights | None = None
    config_variant: str = ""
    calibration: Calibration = field(default_factory=Calibration)
    vocabulary: Any = None
    tokenizer: Any = None

    @property
    def is_ensemble(self) -> bool:
        return bool(self.parts)

    @property
    def has_onnx(self) -> bool:
        """Whether it, or one of an ensemble's parts, holds ``model.onnx``."""
        return self.onnx or any(part.onnx for part in self.parts)

    @classmethod
    def open(cls, location: str | Path, revision: str | None = None) -> ModelFolder:
        """The folder at ``location`` (a path, or a hub id at ``revision``), checked whole
        (see the module docstring); a UserError naming the file otherwise."""
        path = resolve_model_location(location, revision)
        if not (path / META).is_file():
            raise UserError(
                f"{location}: not a trained model folder (no {META}); train one "
                "(`dvc repro`) or name the folder of one"
            )
        meta, classes = read_model_meta(path)
        inference_precision(path, meta)  # a value this lttw does not run, named as such
        check_folder(path, meta)  # files present and as recorded, parts too, before reading
        return cls.described(path, meta, classes)

    @classmethod
    def described(cls, path: Path, meta: dict, classes: list[str]) -> ModelFolder:
        """The description of a folder whose files are checked (``folder_files``): its
        settings, word rules, tokenizer and an ensemble's parts checked, and what the
        backends read of it loaded (config, calibration, vocabulary or tokenizer)."""
        inference_precision(path, meta)
        check_word_rules(path, meta)
        calibration = checked_calibration(path, meta, len(classes))
        variant = str(meta["variant"])
        if variant in ENSEMBLE_PARTS:
            weights = EnsembleWeights.load(path)
            parts = []
            for name in weights.parts:
                if not (path / name / META).is_file():
                    raise UserError(f"{path / name / META}: missing (the ensemble's part {name!r})")
                part_meta, part_classes = read_model_meta(path / name)
                if part_classes != classes:
                    raise UserError(
                        f"{path / name / 'labels.json'}: other classes than {path / ENSEMBLE_FILE}'s "
                        "ensemble; the folder is damaged"
                    )
                parts.append(cls.described(path / name, part_meta, part_classes))
            return cls(
                path,
                meta,
                classes,
                variant,
                {},
                parts=tuple(parts),
                weights=weights,
                calibration=calibration,
            )
        config_variant, config = read_model_config(path)
        check_settings(path, meta, config)
        if (path / TOKENIZER).is_dir():
            check_tokenizer_folder(path)  # before the weights: fail fast, no remote code
        vocabulary, tokenizer = _token_reader(path, config_variant)
        return cls(
            path,
            meta,
            classes,
            variant,
            config,
            onnx=(path / ONNX_FILE).is_file(),
            config_variant=config_variant,
            calibration=calibration,
            vocabulary=vocabulary,
            tokenizer=tokenizer,
        )


def _token_reader(path: Path, config_variant: str) -> tuple[Any, Any]:
    """``(vocabulary, tokenizer)``: the ``WordVocabulary`` of ``words/`` where the model
    embeds words, else the saved tokenizer where it reads tokens; (None, None) for a model
    of texts."""
    if variant_reads(config_variant) != TOKENS:
        return None, None
    if (path / WORDS).is_dir():
        from lttw.text.word_ids import WordVocabulary

        return WordVocabulary.load(path / WORDS), None
    from lttw.encoder.tokenizer import load_saved_tokenizer

    return None, load_saved_tokenizer(path / TOKENIZER)


def verify_folder(folder: str | Path) -> FolderCheck:
    """``lttw verify`` and ``lttw push``'s check of a local folder: every file against its
    recorded checksum (problems listed, one line each, a stray file in an ensemble's part
    among them); where they all match, its settings against its weights (a UserError)."""
    folder = Path(folder)
    if not (folder / META).is_file():
        raise UserError(f"{folder}: not a trained model folder (no {META})")
    meta, classes = read_model_meta(folder)
    found = verify(folder, meta)
    found.problems += [
        f"{folder / name}: not a file of the ensemble's part (its loader does not read it); "
        "added after the folder was written: remove it"
        for name in found.stray
    ]
    if not found.problems:
        ModelFolder.described(folder, meta, classes)
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


def check_word_rules(path: Path, meta: dict) -> None:
    """Every word pattern the folder records, compiled once with a bound on its cost."""
    found = []
    for key in ("words", "counts"):
        record = meta.get(key)
        if isinstance(record, dict) and "token_pattern" in record:
            found.append((record["token_pattern"], f"{path / META}: {key}.token_pattern"))
    for sub in (FACTORS, WORDS):
        rule = path / sub / WORDS_FILE
        if rule.is_file():
            check_size(rule)
            record = read_json(rule)
            if isinstance(record, dict) and "token_pattern" in record:
                found.append((record["token_pattern"], f"{rule}: token_pattern"))
    for pattern, where in found:
        check_pattern_cost(pattern, where)
