"""The encoder's tokenizer: load it (``model.encoder``'s, or one saved in a model folder) and
save it with the same files on every machine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lttw.encoder.hub_loading import load_local_or_hub, quiet_transformers
from lttw.errors import UserError, one_line


def load_tokenizer(path_or_name: str | os.PathLike):
    """The encoder's tokenizer (``AutoTokenizer``, no remote code). A local folder whose
    ``tokenizer_config.json`` names ``BertTokenizer`` loads through that class directly: the
    same tokenizer (and the same saved files), without ``AutoTokenizer``'s config classes,
    which import torch (about 1.7 s of the ``tokens`` stage's start-up)."""
    loader_class: Any  # BertTokenizer or AutoTokenizer
    if _local_tokenizer_class(path_or_name) == "BertTokenizer":
        from transformers import BertTokenizer as loader_class
    else:
        from transformers import AutoTokenizer as loader_class

    with quiet_transformers():
        return load_local_or_hub(path_or_name, loader_class.from_pretrained)


def _local_tokenizer_class(path_or_name: str | os.PathLike) -> str | None:
    """``tokenizer_class`` of a local folder's ``tokenizer_config.json`` (None: none)."""
    file = Path(str(path_or_name)).expanduser() / "tokenizer_config.json"
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config.get("tokenizer_class") if isinstance(config, dict) else None


#: tokenizer init kwargs that record how it was loaded (environment, machine), not what it is
_LOAD_KWARGS = {
    "local_files_only",
    "is_local",
    "trust_remote_code",
    "cache_dir",
    "token",
    "force_download",
    "proxies",
    "revision",
    "subfolder",
    "_commit_hash",
    "_from_auto",
    "use_auth_token",
}


def save_tokenizer(tokenizer, folder: str | os.PathLike) -> None:
    """``save_pretrained`` without the load-time arguments transformers records in
    ``tokenizer_config.json`` (e.g. ``local_files_only``, True under ``HF_HUB_OFFLINE``), so
    the files, and their DVC hashes, are the same on every machine and environment."""
    kept = tokenizer.init_kwargs
    tokenizer.init_kwargs = {k: v for k, v in kept.items() if k not in _LOAD_KWARGS}
    try:
        tokenizer.save_pretrained(str(folder))
    finally:
        tokenizer.init_kwargs = kept


def load_saved_tokenizer(folder: str | os.PathLike):
    """A tokenizer saved in a folder (``tokenizer_from_files`` of its files)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(2, "no tokenizer folder here", str(folder))
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    return tokenizer_from_files(files, folder)


def tokenizer_from_files(files: dict[str, bytes], where: Path):
    """The tokenizer of a model folder's ``tokenizer/`` files read into memory (name ->
    bytes; ``where``: the folder, named in messages): local files only, no remote code; a
    damaged one raises a UserError naming the folder. A BERT tokenizer with a
    ``tokenizer.json`` runs on the ``tokenizers`` library alone (``tokens.WordPieceFile``, no
    transformers import); any other is loaded by transformers from a private copy of exactly
    these bytes."""
    import tempfile

    from lttw.encoder.tokens import WordPieceFile

    try:
        fast = WordPieceFile.from_files(files)
    except Exception as err:  # tokenizers raises a bare Exception for a damaged file
        raise UserError(f"{where}: not a readable tokenizer ({one_line(err, lines=1)})") from None
    if fast is not None:
        return fast
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory(prefix="lttw-tokenizer-") as copy:
        for name, data in files.items():
            (Path(copy) / name).write_bytes(data)
        try:
            with quiet_transformers():
                return AutoTokenizer.from_pretrained(
                    copy, trust_remote_code=False, local_files_only=True
                )
        except (OSError, ValueError, KeyError, TypeError) as err:
            reason = f"no {err}" if isinstance(err, KeyError) else one_line(err, lines=1)
            raise UserError(f"{where}: not a readable tokenizer ({reason})") from None
