"""Batch prediction on Ray Data: ``lttw predict --engine ray --file SHARDS --out FOLDER``.

For inputs too large for one process (``lttw predict --file`` streams one file through one
model), Ray Data spreads the work over an actor pool, on this machine or on a Ray cluster
the user already runs (``--ray-address``, or ``RAY_ADDRESS``):

- **read**: each input shard (``.parquet`` / ``.pq`` / ``.csv`` / ``.tsv``; a file, a folder
  of them or a glob) is one read task, which yields its rows in blocks of ``block_rows`` with
  every column kept, plus ``shard`` (the file's name) and ``row`` (1-based, as
  ``lttw predict --file`` names rows in its errors). A shard is read as ``lttw predict
  --file`` reads a file (``inference.text_sources.open_source``): every text held to the same
  ``LineCap`` (refused with its shard and row, or cut), a CSV record to the same byte bound
  before pandas reads it.
- **predict**: ``map_batches`` over an ``ActorPoolStrategy`` of ``actors`` actors; each loads
  the model once (``lttw.inference.loading.load_predictor``: ONNX where the folder holds
  ``model.onnx``) and adds the columns ``lttw predict --file --no-text`` writes (label, prob,
  prob_<class>; multi-label: labels).
- **write**: parquet shards into a temporary folder beside ``out``, renamed into place when
  every shard is written, so a failure leaves nothing half-written.

The rows come back in no fixed order; ``shard`` and ``row`` say which input row each is.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from lttw.data.tables import CSV_SUFFIXES, PARQUET_SUFFIXES
from lttw.errors import DataError, UserError, one_line
from lttw.inference.answers import AnswerRule
from lttw.inference.prediction_table import ALL_COLUMNS, prediction_frame
from lttw.inference.text_lines import LineCap
from lttw.inference.text_sources import TextSource, open_source, pick_text_column
from lttw.io import atomic_dir
from lttw.serving.ray_errors import ray_failures_as_errors

SHARD_SUFFIXES = tuple(CSV_SUFFIXES) + tuple(PARQUET_SUFFIXES)
#: columns the reader adds to every row; an input column of the same name is refused
ROW_ID_COLUMNS = ("shard", "row")
#: at most this many input shards (a glob over a whole disk is a mistake, not a job)
MAX_SHARDS = 100_000


@dataclass(frozen=True)
class RayBatchSettings:
    """How ``predict_shards`` runs.

    Args:
        actors: model replicas (Ray actors), each holding one copy of the model.
        cpus_per_actor: CPUs Ray reserves for each actor (its intra-op threads).
        batch_size: texts per ``map_batches`` call (and per forward pass).
        block_rows: rows per block a read task yields (bounds a read task's memory).
        text_column: the shards' text column (default: the project's ``project_column``
            where the shards have it, else ``text``, else the only column).
        project_column: the project's ``data.text_column``, if any.
        with_text: keep the text column in the output.
        max_chars: characters per text, as ``lttw predict --max-chars``.
        truncate: cut longer texts instead of refusing them.
        address: a running Ray cluster's address; None starts (or joins) a local Ray.
        min_prob / top_k: as ``lttw predict``'s options.
    """

    actors: int = 1
    cpus_per_actor: float = 1.0
    batch_size: int = 256
    block_rows: int = 8192
    text_column: str | None = None
    project_column: str | None = None
    with_text: bool = True
    max_chars: int = 10_000
    truncate: bool = False
    address: str | None = None
    min_prob: float | None = None
    top_k: int | None = None

    def __post_init__(self) -> None:
        for name in ("actors", "batch_size", "block_rows", "max_chars"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1")
        if self.cpus_per_actor <= 0:
            raise UserError("--cpus-per-actor must be positive")


def shard_paths(source: str | Path) -> list[Path]:
    """The input shards: ``source`` itself (a file), the shards in a folder, or a glob's matches;
    sorted, at least one, each of a known type."""
    text = str(source)
    path = Path(text)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() in SHARD_SUFFIXES)
        where = f"{path}: no .parquet / .csv / .tsv files in this folder"
    elif any(ch in text for ch in "*?["):
        found = sorted(Path(p) for p in glob.iglob(text) if Path(p).is_file())
        where = f"{text}: matches no file"
    elif path.is_file():
        found = [path]
        where = ""
    else:
        raise UserError(f"{path}: no such file or folder")
    if not found:
        raise UserError(where)
    if len(found) > MAX_SHARDS:
        raise UserError(f"{text}: {len(found):,} files; at most {MAX_SHARDS:,} shards per run")
    for shard in found:
        if shard.suffix.lower() not in SHARD_SUFFIXES:
            raise UserError(f"{shard}: not a shard (.parquet, .pq, .csv or .tsv)")
    kinds = {shard.suffix.lower() in PARQUET_SUFFIXES for shard in found}
    if len(kinds) > 1:  # CSV columns are read as text: their types would not match parquet's
        raise UserError(f"{text}: mixes parquet and CSV shards; convert them to one format")
    return found


def open_shard(path: Path, settings: RayBatchSettings) -> TextSource:
    """A shard opened for reading (its header read and checked: the text column found, no
    column named like the row ids), as ``lttw predict --file`` opens a file."""
    cap = LineCap(settings.max_chars, settings.truncate)
    source = open_source(
        path, settings.text_column, cap, ALL_COLUMNS, settings.project_column, settings.block_rows
    )
    taken = sorted(set(ROW_ID_COLUMNS) & set(source.columns))
    if taken:
        raise DataError(f"{path}: has a column named {taken[0]!r}, which the output uses")
    return source


def read_shard(path: Path, settings: RayBatchSettings) -> Iterator[pd.DataFrame]:
    """One shard's rows, ``block_rows`` at a time, as ``lttw predict --file`` reads a file
    (``text_sources.open_source``: every column kept, CSV columns as strings, the text held
    to the cap), with ``shard`` / ``row`` first and the columns in the file's order."""
    source = open_shard(path, settings)
    column = str(source.column)  # shards are tables (shard_paths): a text column
    at = source.columns.index(column)
    row = 1
    chunks = source.chunks()
    while True:
        try:
            texts, kept = next(chunks)
        except StopIteration:
            return
        except UserError:
            raise
        except Exception as err:  # pyarrow's / pandas' errors on a damaged page or record
            raise DataError(f"{path}: cannot be read after row {row - 1} ({one_line(err, 1)})")
        frame = pd.DataFrame(index=range(len(texts))) if kept is None else kept.copy()
        frame.insert(at, column, texts)
        frame.insert(0, "row", range(row, row + len(frame)))
        frame.insert(0, "shard", path.name)
        row += len(frame)
        yield frame


def check_headers(shards: list[Path], settings: RayBatchSettings) -> None:
    """Every shard's header readable, with the first shard's columns and text column (the
    actors' batches mix rows of several shards): a one-line ``DataError`` naming the shard."""
    first = open_shard(shards[0], settings)
    for shard in shards[1:]:
        source = open_shard(shard, settings)
        missing = sorted(set(first.columns) - set(source.columns))[:5]
        extra = sorted(set(source.columns) - set(first.columns))[:5]
        if missing or extra or source.column != first.column:
            raise DataError(
                f"{shard}: not the columns of {shards[0].name} (lacks {missing}, adds {extra}, "
                f"text column {source.column!r}); every shard needs the same columns"
            )


def local_cpus() -> int:
    """The CPUs this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def check_local_actors(settings: RayBatchSettings) -> None:
    """On a local Ray (no ``--ray-address`` / ``RAY_ADDRESS``), the actors fit this
    machine's CPUs: each is a model copy and a worker process."""
    if settings.address or os.environ.get("RAY_ADDRESS"):
        return
    cpus = local_cpus()
    if settings.actors * settings.cpus_per_actor > cpus:
        most = max(1, int(cpus // settings.cpus_per_actor))
        raise UserError(
            f"--actors {settings.actors} x --cpus-per-actor {settings.cpus_per_actor:g}: "
            f"more than this machine's {cpus} CPUs; at most {most} on a local Ray "
            "(more on a cluster: --ray-address)"
        )


def _read_shards(batch: pd.DataFrame, settings: RayBatchSettings) -> Iterator[pd.DataFrame]:
    """``map_batches`` function over shard paths (a read task each): their rows, by block."""
    for path in batch["path"]:
        yield from read_shard(Path(path), settings)


class _PredictorActor:
    """An actor of the pool: the model loaded once, then one prediction frame per batch."""

    def __init__(self, model_dir: str, settings: RayBatchSettings):
        from lttw.inference.loading import load_predictor

        self.predictor = load_predictor(model_dir, threads=max(1, int(settings.cpus_per_actor)))
        self.settings = settings
        self.rule = AnswerRule(self.predictor.calibration, settings.min_prob, settings.top_k)
        self.column: str | None = None

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        if self.column is None:
            names = [c for c in batch.columns if c not in ROW_ID_COLUMNS]
            self.column = pick_text_column(
                names, self.settings.text_column, "the shards", self.settings.project_column
            )
        texts = batch[self.column].tolist()
        probs = self.predictor.predict_proba(texts, self.settings.batch_size)
        answers = prediction_frame(
            texts, probs, self.predictor.classes, with_text=False, rule=self.rule
        )
        kept = batch if self.settings.with_text else batch.drop(columns=[self.column])
        return pd.concat([kept.reset_index(drop=True), answers], axis=1)


def _ray(settings: RayBatchSettings):
    try:
        import ray
    except ImportError:
        raise UserError(
            "--engine ray needs Ray Data: pip install 'lttw[ray]' (or 'ray[data]')"
        ) from None
    if not ray.is_initialized():
        address = settings.address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False)
        else:  # a local Ray: the machine's CPUs (one more for a read task), no dashboard
            cpus = max(local_cpus(), settings.actors * settings.cpus_per_actor + 1)
            ray.init(num_cpus=int(cpus), include_dashboard=False, log_to_driver=False)
    return ray


def predict_shards(
    model_dir: str | Path, source: str | Path, out: str | Path, settings: RayBatchSettings
) -> int:
    """Predict every row of ``source``'s shards with ``model_dir``'s model into parquet
    shards in the folder ``out`` (which must not exist); the number of rows written."""
    shards = shard_paths(source)
    target = Path(out)
    if target.exists():
        raise UserError(f"{target}: exists; --out names a new folder for the parquet shards")
    if not target.parent.is_dir():
        raise UserError(f"{target}: the folder {target.parent} does not exist; create it first")
    check_local_actors(settings)
    check_headers(shards, settings)  # fail on a shard's header before any actor starts
    ray = _ray(settings)
    items = pd.DataFrame({"path": [str(p.resolve()) for p in shards]})
    dataset = (
        ray.data.from_pandas(items)
        .repartition(len(shards))
        .map_batches(
            _read_shards, fn_kwargs={"settings": settings}, batch_size=1, batch_format="pandas"
        )
        .map_batches(
            _PredictorActor,
            fn_constructor_args=(str(Path(model_dir).resolve()), settings),
            batch_size=settings.batch_size,
            batch_format="pandas",
            num_cpus=settings.cpus_per_actor,
            compute=ray.data.ActorPoolStrategy(size=settings.actors),
        )
    )
    # renamed into place once every shard is written
    with ray_failures_as_errors(), atomic_dir(target) as partial:
        dataset.write_parquet(str(partial))
        rows = sum(_parquet_rows(p) for p in partial.glob("*.parquet"))
    return rows


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
