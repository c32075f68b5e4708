"""Streaming prediction for ``lttw predict --file``: read texts chunk by chunk
(``text_sources.open_source``: the input formats and their bounds), predict each chunk, and
write its rows before the next chunk is read, so memory stays bounded by ``CHUNK_ROWS`` (and
for CSV ``csv_records.CHUNK_BYTES``) however large the input is.

Outputs: ``.csv`` / ``.tsv`` or ``.parquet`` / ``.pq``, written to a temporary file beside the
         target and renamed into place at the end; ``-`` writes CSV to stdout.
Columns: the input's other columns (a CSV / parquet file's ids and the like: all of them,
         or those ``--keep`` names; CSV ones as text, as written), then text (unless left
         out), label (class name; empty below ``--min-prob``) and prob (the most probable
         class's probability), or for a multi-label model labels (class names, joined by "|"
         in CSV, a list in parquet); top_i / top_i_prob for i up to ``--top-k``;
         prob_<class>. A kept column named like one of these is written as input_<name>.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lttw.data.tables import csv_separator
from lttw.errors import UserError
from lttw.inference.answers import AnswerRule
from lttw.inference.prediction_table import (
    LIST_COLUMN,
    LIST_SEPARATOR,
    prediction_frame,
    with_kept,
)
from lttw.inference.text_sources import TextSource, check_input_file, file_kind
from lttw.io import atomic_path

STDOUT = "-"


def check_paths(file: Path | None, out: str | None, force: bool = False) -> None:
    """Fail fast, before a model is loaded, on a missing input, an unknown file type, an
    output folder that does not exist, or an output file that exists (unless ``force``)."""
    if file is not None:
        check_input_file(file)
    if out is not None and out != STDOUT:
        file_kind(out, "output")
        target = Path(out)
        folder = target.parent
        if not folder.is_dir():
            raise UserError(f"{out}: the folder {folder} does not exist; create it first")
        if target.is_dir():
            raise UserError(f"{out}: is a folder; --out names a file")
        if file is not None and target.exists() and target.resolve() == file.resolve():
            raise UserError(f"{out}: is the input file; write the predictions elsewhere")
        if target.exists() and not force:
            raise UserError(f"{out}: exists; pass --force to replace it")


#: a bar in bytes: the progress bar's own format with the unit after both sizes (``1.2MB/3.4MB``)
_BYTES_BAR = "{l_bar}{bar}| {n_fmt}B/{total_fmt}B [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


def predict_chunks(
    predictor,
    source: TextSource,
    batch_size: int,
    with_text: bool = True,
    progress: bool = True,
    rule: AnswerRule | None = None,
) -> Iterator[pd.DataFrame]:
    """One prediction frame per chunk of ``source`` (an empty frame for an empty file); the
    progress bar moves after every forward batch of ``batch_size`` texts: by texts against
    the file's rows, or for a CSV file by bytes against its size (a chunk's bytes shared
    among its forward batches), with an ETA either way."""
    from lttw.progress import progress as progress_bar

    empty = True
    classes = predictor.classes
    read = source.bytes_read
    unit: dict[str, Any] = {"unit": "text"}
    if read is not None:
        unit = {"unit": "B", "unit_scale": True, "unit_divisor": 1024, "bar_format": _BYTES_BAR}
    total = source.total if read is None else read.size
    with progress_bar(total=total, desc="predict", disable=not progress, **unit) as bar:
        shown = 0
        for texts, extra in source.chunks():
            empty = False
            parts, before = [], shown
            for start in range(0, len(texts), batch_size):  # one forward batch each
                batch = texts[start : start + batch_size]
                parts.append(predictor.predict_proba(batch, batch_size))
                if read is None:
                    bar.update(len(batch))
                    continue
                done = start + len(batch)
                now = before + (read.done - before) * done // len(texts)
                bar.update(now - shown)
                shown = now
            probs = np.concatenate(parts) if parts else np.zeros((0, len(classes)))
            frame = prediction_frame(texts, probs, classes, with_text, rule)
            yield with_kept(frame, extra)
        if read is not None:  # the bytes after the last row (a header alone: all of them)
            bar.update(read.size - shown)
    if empty:
        frame = prediction_frame([], np.zeros((0, len(classes))), classes, with_text, rule)
        yield with_kept(frame, pd.DataFrame(columns=source.kept, dtype=str))


def _write_csv(frames: Iterable[pd.DataFrame], handle, sep: str) -> int:
    rows = 0
    for i, frame in enumerate(frames):
        if LIST_COLUMN in frame:  # multi-label: class names joined by LIST_SEPARATOR
            frame = frame.assign(
                **{LIST_COLUMN: [LIST_SEPARATOR.join(v) for v in frame[LIST_COLUMN].tolist()]}
            )
        frame.to_csv(handle, sep=sep, header=i == 0, index=False)
        rows += len(frame)
    return rows


def _arrow_table(frame: pd.DataFrame, schema=None):
    """``frame`` as an arrow table (of ``schema``, or inferred: a multi-label frame's
    ``LIST_COLUMN`` as a list of strings, also where a chunk holds only empty lists)."""
    import pyarrow as pa

    if schema is not None or LIST_COLUMN not in frame:
        return pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    table = pa.Table.from_pandas(frame.drop(columns=[LIST_COLUMN]), preserve_index=False)
    lists = pa.array(frame[LIST_COLUMN].tolist(), pa.list_(pa.string()))
    return table.add_column(frame.columns.get_loc(LIST_COLUMN), LIST_COLUMN, lists)


def _write_parquet(frames: Iterable[pd.DataFrame], path: Path) -> int:
    import pyarrow.parquet as pq

    rows, writer = 0, None
    try:
        for frame in frames:
            table = _arrow_table(frame, None if writer is None else writer.schema)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            rows += len(frame)
    finally:
        if writer is not None:
            writer.close()
    return rows


def write_frames(frames: Iterable[pd.DataFrame], out: str | Path) -> int:
    """Write frames one after another to ``out`` (atomically; ``-``: CSV on stdout).
    Returns the number of rows written."""
    if str(out) == STDOUT:
        return _write_csv(frames, sys.stdout, ",")
    out = Path(out)
    kind = file_kind(out, "output")
    try:
        with atomic_path(out) as tmp:
            if kind == "parquet":
                return _write_parquet(frames, tmp)
            with open(tmp, "w", encoding="utf-8", newline="") as handle:
                return _write_csv(frames, handle, csv_separator(out))
    except OSError as err:  # named after the user's path, not the hidden temporary file
        name = Path(err.filename).name if err.filename else None
        if name is None or name == out.name or name.startswith(f".{out.name}."):
            raise UserError(f"{out}: cannot write ({err.strerror or err})") from None
        raise
