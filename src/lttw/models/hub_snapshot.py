"""Where a model named by path or hub id lies on this machine.

``resolve_model_location``: a local folder is returned as it is; anything else is not a
trained model folder here.
"""

from __future__ import annotations

from pathlib import Path

from lttw.errors import UserError
from lttw.model_files import META


def resolve_model_location(name_or_path: str | Path, revision: str | None = None) -> Path:
    """The local folder of the model ``name_or_path`` (``revision``: a hub revision; a local
    folder has none)."""
    path = Path(name_or_path)
    if path.exists():
        return path
    raise UserError(
        f"{name_or_path}: not a trained model folder (no {META}); train one (`dvc repro`) "
        "or name the folder of one"
    )
