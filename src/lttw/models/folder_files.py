"""The files of a model folder: which ones the loader reads, which it needs, and their
sha256 checksums.

``lttw.json`` records ``sha256``, ``{relative path: hex digest}`` for every file the loader
reads; its entry for ``lttw.json`` itself is the digest of the settings prediction reads
(``SETTINGS_KEYS``, canonical JSON: the file gains other keys after it is recorded, e.g. the
final model's record), and an ensemble's also holds each part's ``lttw.json`` (which records
the part's own files). The train stage records them when it writes ``models/fold_N``,
``lttw export`` when it writes its copy; ``lttw verify --record`` records them in a folder
assembled by hand (``record_first_checksums``: never over recorded ones). On load
(``folder_reader.read_folder``) the checksums must be recorded, every recorded file must be
there with its recorded digest, and every file the loader would read must be recorded; the
first that is not raises a one-line ``UserError`` naming it. Every file the loader reads is
first held to the size limit of its kind (``size_limit``).

The limits, by the size on disk, so that the error comes first, as one line naming the file
(a file far larger than any real one, a damaged copy or a hostile folder, would otherwise
cost its size in memory before anything could say it is wrong):

    weights, NMF factors, ONNX (``.safetensors``, ``.onnx``)   8 GiB
    vocabularies (``vocabulary.json``, ``vocab.txt``) and
    tokenizer files (``tokenizer/``)                           256 MiB
    every other file (lttw.json, labels.json, config.json,
    calibration.json, ensemble.json, ...)                      16 MiB

They sit well above the largest real files (bert-large's weights are 1.3 GB, a
250,000-token multilingual tokenizer.json about 17 MB, lttw.json a few KB).

The checksums catch a file changed or truncated in place (a disk or copy error, an edit by
hand) whatever its size and time say; they are not a signature: whoever can write the
folder can rewrite ``lttw.json`` too.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from lttw.errors import UserError
from lttw.io import read_json, write_json
from lttw.models.ensemble import ENSEMBLE_PARTS
from lttw.models.files import (
    CALIBRATION,
    CARD,
    CHECKSUMS,
    CONFIG_NAME,
    ENSEMBLE_FILE,
    FACTORS,
    LABELS,
    META,
    METRICS,
    ONNX_FILE,
    ONNX_RECORD,
    TFIDF_VOCABULARY,
    TOKENIZER,
    WEIGHTS_NAME,
    WORDS,
)

#: the keys of lttw.json that prediction reads, under its checksum
SETTINGS_KEYS = (
    "variant",
    "max_len",
    "k",
    "s",
    "ranking",
    "counts",
    "words",
    "vocab",
    "with_factors",
    "precision",
    "multi_label",
    "frozen_encoder",
)
#: the top-level files a loader reads: the classifier (torch, or tfidf's extra vocabulary),
#: what prediction needs, and what ``lttw export --onnx`` / ``lttw serve`` add (model.onnx
#: and onnx.json: ``models.onnx_classifier``; metrics.json: ``serving.info``), how scores
#: become probabilities and labels (calibration.json: ``models.calibration``; absent:
#: softmax, temperature 1), an ensemble's weights (``models.ensemble``), and the model card
#: (README.md with metrics.json: ``lttw.models.card``; checked and carried like the rest)
TOP_LEVEL = (
    CARD,
    CONFIG_NAME,
    WEIGHTS_NAME,
    TFIDF_VOCABULARY,
    LABELS,
    META,
    ONNX_FILE,
    ONNX_RECORD,
    METRICS,
    CALIBRATION,
    ENSEMBLE_FILE,
)
#: sub-folders the loader reads, and the kinds of file it reads in them (never pickles,
#: torch checkpoints or code: a stray pytorch_model.bin is not a file of the model)
SUBFOLDERS = (TOKENIZER, WORDS, FACTORS)
SUBFOLDER_SUFFIXES = (".json", ".safetensors", ".txt", ".model")
_CHUNK = 1 << 20
MIB = 1 << 20
WEIGHTS_MAX = 8 << 30
VOCABULARY_MAX = 256 * MIB
SMALL_MAX = 16 * MIB
_WEIGHT_SUFFIXES = (".safetensors", ".onnx")


def size_limit(name: str) -> tuple[int, str]:
    """The most bytes the model folder's file ``name`` (a relative path) may have, and what
    kind of file that limit is for."""
    path = Path(name)
    if path.suffix in _WEIGHT_SUFFIXES:
        return WEIGHTS_MAX, "weights file"
    if path.parts[0] in (TOKENIZER, WORDS) or path.stem in ("vocabulary", "vocab"):
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


def loader_files(folder: str | Path) -> list[str]:
    """The files of ``folder`` that loading it reads, as sorted relative POSIX paths
    (regular files only; a link counts as the file it points to)."""
    folder = Path(folder)
    found = [name for name in TOP_LEVEL if (folder / name).is_file()]
    for sub in SUBFOLDERS:
        if (folder / sub).is_dir():
            found += [
                f"{sub}/{p.name}"
                for p in (folder / sub).iterdir()
                if p.is_file() and p.suffix in SUBFOLDER_SUFFIXES
            ]
    return sorted(found)


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def settings_sha256(meta: dict) -> str:
    """The hex sha256 of lttw.json's ``SETTINGS_KEYS`` as canonical JSON."""
    settings = {key: meta[key] for key in SETTINGS_KEYS if key in meta}
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ensemble_parts(folder: str | Path) -> tuple[str, ...]:
    """The part sub-folders of an ensemble model folder (``models.ensemble``), by the variant
    its lttw.json names; () for any other folder."""
    meta_path = Path(folder) / META
    check_size(meta_path)
    meta = read_json(meta_path)
    return ENSEMBLE_PARTS.get(str(meta.get("variant")), ()) if isinstance(meta, dict) else ()


def record_checksums(folder: str | Path) -> dict[str, str]:
    """Write the sha256 of every file the loader reads into ``folder``'s lttw.json (the
    last step of writing a model folder; an ensemble's parts first, each into its own
    lttw.json); returns the folder's own."""
    folder = Path(folder)
    parts = ensemble_parts(folder)
    for part in parts:
        record_checksums(folder / part)
    sums = {name: file_sha256(folder / name) for name in loader_files(folder) if name != META}
    sums.update({f"{part}/{META}": file_sha256(folder / part / META) for part in parts})
    meta = read_json(folder / META)
    sums[META] = settings_sha256(meta)
    meta[CHECKSUMS] = sums
    write_json(folder / META, meta)
    return sums


def record_first_checksums(folder: str | Path) -> None:
    """``record_checksums`` for a folder assembled by hand: refused (one line naming the
    lttw.json) where it or an ensemble's part already records checksums, whose files would
    then be taken as they are now, changed or not."""
    folder = Path(folder)
    for where in [folder, *(folder / part for part in ensemble_parts(folder))]:
        check_size(where / META)
        meta = read_json(where / META)
        if isinstance(meta, dict) and CHECKSUMS in meta:
            raise UserError(
                f"{where / META}: checksums already recorded; --record only writes them where "
                "there are none (`lttw verify` checks the files against them)"
            )
    record_checksums(folder)


def required_files(folder: Path, meta: dict) -> dict[str, str]:
    """What loading ``folder`` cannot do without, whatever is recorded, and what each file
    is: labels, config and weights (and tfidf's vocabulary), the tokenizer's tokenizer.json
    and config, the word vocabulary, the factor files, a multi-label folder's thresholds."""
    if meta.get("variant") in ENSEMBLE_PARTS:  # its parts are model folders of their own
        return {LABELS: "class names", ENSEMBLE_FILE: "ensemble weights"}
    needed = {LABELS: "class names", CONFIG_NAME: "model config"}
    if not (folder / ONNX_FILE).is_file():
        needed[WEIGHTS_NAME] = "model weights"
    if meta.get("variant") == "tfidf_linear":
        needed[TFIDF_VOCABULARY] = "tf-idf vocabulary"
    if (folder / TOKENIZER).is_dir():
        needed[f"{TOKENIZER}/tokenizer.json"] = "tokenizer vocabulary"
        needed[f"{TOKENIZER}/tokenizer_config.json"] = "tokenizer config"
    if (folder / WORDS).is_dir():
        needed[f"{WORDS}/vocabulary.json"] = "word vocabulary"
    if meta.get("multi_label"):  # data.label_sets.MULTI_LABEL_KEY
        needed[CALIBRATION] = "per-label thresholds"
    if meta.get("with_factors"):
        needed[f"{FACTORS}/vocabulary.json"] = "factor vocabulary"
        needed[f"{FACTORS}/word_label_counts.safetensors"] = "word-label counts"
        needed[f"{FACTORS}/latent_factors.safetensors"] = "latent factors"
    return needed


def unread_files(folder: str | Path, read: set[str] | None = None) -> list[str]:
    """Files of ``folder`` that loading it does not read (``read``: default
    ``loader_files``), e.g. a stray ``pytorch_model.bin``; sorted relative paths."""
    folder = Path(folder)
    read = set(loader_files(folder)) if read is None else read
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() not in read
    )


def copy_loader_files(source: str | Path, dest: str | Path) -> list[str]:
    """Copy the files loading ``source`` reads into ``dest`` (links followed, nothing else
    copied; an ensemble's part folders each copied the same way), its recorded checksums
    with them (a load of the copy checks it against them); returns the files left out
    (``unread_files``), as paths relative to ``source``."""
    source, dest = Path(source), Path(dest)
    for name in loader_files(source):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, dest / name)
    parts = ensemble_parts(source)
    left_out = [
        name for name in unread_files(source) if not name.startswith(tuple(f"{p}/" for p in parts))
    ]
    for part in parts:
        if not (source / part / META).is_file():
            raise UserError(
                f"{source / part / META}: missing (the ensemble's part {part!r}); the model "
                "folder is incomplete"
            )
        (dest / part).mkdir()
        left_out += [f"{part}/{name}" for name in copy_loader_files(source / part, dest / part)]
    return left_out
