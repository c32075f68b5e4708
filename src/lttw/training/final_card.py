"""The final model's card (``lttw.models.card``): written into ``models/final`` by the final
stage, from its record, the sample's ``labels.json``, the dataset's ``manifest.json`` (its hub
id, language and licence) and the settings that made it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lttw import layout
from lttw.errors import UserError
from lttw.evaluation.estimate import SOURCES
from lttw.io import read_json, write_json
from lttw.models.card import card_metrics, write_card
from lttw.models.card_text import card_source, render_card
from lttw.models.files import CARD, CHECKSUMS, META, METRICS
from lttw.models.folder_files import file_sha256

if TYPE_CHECKING:
    from lttw.settings import Settings

#: the settings groups a card lists (what the final stage reads; the data come from
#: labels.json, the folds from ``folds.run``)
GROUPS = ("model", "train", "words", "counts", "nmf")
#: the largest dataset manifest.json a card reads
MANIFEST_MAX_BYTES = 1 << 20


def code_version() -> dict:
    """The lttw version and the sha256 of the code a stage runs (``project.stamp.stamp``)."""
    from lttw.project.stamp import stamp

    return stamp()


def card_params(settings: Settings, rows: str | None) -> dict:
    """The parameters that made the final model, as a card lists them."""
    params: dict = {"seed": settings.seed, "folds.run": list(settings.folds.run)}
    params.update({name: getattr(settings, name).model_dump() for name in GROUPS})
    if rows is not None:
        params["final.rows"] = rows
    return params


def dataset_manifest(data_root: str | Path, dataset: str, root: Path = Path(".")) -> dict:
    """The ``manifest.json`` of the dataset folder ``data_root/dataset`` (in the project at
    ``root``); empty where there is none (a dataset file, or a folder without one)."""
    path = root / data_root / dataset / "manifest.json"
    if not path.is_file():
        return {}
    size = path.stat().st_size
    if size > MANIFEST_MAX_BYTES:
        raise UserError(f"{path}: {size:,} bytes; a manifest is read up to {MANIFEST_MAX_BYTES:,}")
    manifest = read_json(path)
    return manifest if isinstance(manifest, dict) else {}


def write_final_card(
    folder: Path,
    record: dict,
    about: dict,
    settings: Settings,
    rows: str | None,
    license: str | None = None,
) -> None:
    """``README.md`` and ``metrics.json`` of the final model in ``folder``; ``settings``: the
    parameters (the card lists ``GROUPS``, the seed and ``folds.run``; ``data`` names the
    dataset's manifest); ``license``: the card's licence (``final.license``; None: the
    dataset manifest's)."""
    labels_info = read_json(layout.LABELS_JSON)
    about = {**about, "estimate_source": SOURCES[about["estimate_source"]]}
    doc = card_metrics(record, about, labels_info, code_version())
    meta = read_json(folder / META)
    source = card_source(dataset_manifest(settings.data.root, settings.data.dataset), license)
    readme = render_card(doc, about, meta, labels_info, card_params(settings, rows), source)
    write_card(folder, doc, readme)
    record_card_checksums(folder)


def record_card_checksums(folder: Path) -> None:
    """Add the card's files to the sha256 checksums that the folder's ``lttw.json`` records
    (``models.folder_files``)."""
    meta = read_json(folder / META)
    sums = meta[CHECKSUMS]  # recorded by the train stage (``folder_files.record_checksums``)
    for name in (CARD, METRICS):
        sums[name] = file_sha256(folder / name)
    write_json(folder / META, meta)
