"""Copies of a tiny model folder with a calibration.json (``models.calibration``): a
single-label one with a temperature, and a multi-label one (lttw.json ``"multi_label":
true``, sigmoid with per-class thresholds), checksums re-recorded as the train stage would."""

from __future__ import annotations

import shutil
from pathlib import Path


def calibrated_copy(source: Path, dest: Path, multi_label: bool = False, **calibration) -> Path:
    """``source`` copied to ``dest`` with ``Calibration(multi_label, **calibration)``."""
    from lttw.io import read_json, write_json
    from lttw.models.calibration import Calibration, save_calibration
    from lttw.models.files import META
    from lttw.models.folder_files import record_checksums

    shutil.copytree(source, dest)
    if multi_label:
        meta = read_json(dest / META)
        meta["multi_label"] = True
        write_json(dest / META, meta)
    save_calibration(Calibration(multi_label=multi_label, **calibration), dest)
    record_checksums(dest)
    return dest
