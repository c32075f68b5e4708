"""Streaming prediction for ``lttw predict --file``: read texts chunk by chunk, predict each
chunk, and write its rows before the next chunk is read, so memory stays bounded by
``CHUNK_ROWS`` (and for CSV ``csv_records.CHUNK_BYTES``) however large the input is.

Inputs:  ``.txt`` (one text per line, each read in bounded pieces: ``text_lines``),
         ``.csv`` / ``.tsv`` (a text column; split into records in bounded reads, a record
         of more than ``csv_record_bytes`` refused, and parsed by ``pandas.read_csv`` a
         chunk of records at a time: ``csv_records``),
         ``.parquet`` / ``.pq`` (``ParquetFile.iter_batches``). Every text is held to a
         ``LineCap`` (``--max-chars``, default 10,000 like the server): refused with its
         line / row number, or cut with ``--truncate``.
Outputs: ``.csv`` / ``.tsv`` or ``.parquet`` / ``.pq``, written to a temporary file beside the
         target and renamed into place at the end; ``-`` writes CSV to stdout.
Columns: the input's other columns (a CSV / parquet file's ids and the like: all of them,
         or those ``--keep`` names; CSV ones as text, as written), then text (unless left
         out), label (class name; empty below ``--min-prob``) and prob (the most probable
         class's probability), or for a multi-label model labels (class names, joined by "|"
         in CSV, a list in parquet); top_i / top_i_prob for i up to ``--top-k``;
         prob_<class>. A kept column named like one of these is written as input_<name>.
Text column: ``--text-column``, else the project's ``data.text_column`` where the file has
         it, else ``text``, else the only column.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lttw.data.tables import CSV_SUFFIXES, PARQUET_SUFFIXES, csv_separator
from lttw.errors import DataError, UserError, one_line
from lttw.inference.answers import AnswerRule
from lttw.inference.csv_records import csv_chunks, csv_header, csv_records
from lttw.inference.prediction_table import (
    ALL_COLUMNS,
    LIST_COLUMN,
    LIST_SEPARATOR,
    kept_columns,
    prediction_frame,
    with_kept,
)
from lttw.inference.text_lines import LineCap, bounded_lines
from lttw.io import UnreadableFileError, atomic_path

#: rows read, predicted and written at a time (tests make it small)
CHUNK_ROWS = 8192

TXT_SUFFIXES = (".txt",)
STDOUT = "-"


def _kind(path: str | Path, what: str) -> str:
    suffix = Path(path).suffix.lower()
    for kind, suffixes in (
        ("txt", TXT_SUFFIXES),
        ("csv", CSV_SUFFIXES),
        ("parquet", PARQUET_SUFFIXES),
    ):
        if suffix in suffixes and not (kind == "txt" and what == "output"):
            return kind
    allowed = ".csv, .tsv, .parquet" + (", .txt" if what == "input" else " or - (stdout)")
    raise UserError(f"{path}: unsupported {what} file type {suffix or '(none)'!r}; use {allowed}")


def check_paths(file: Path | None, out: str | None, force: bool = False) -> None:
    """Fail fast, before a model is loaded, on a missing input, an unknown file type, an
    output folder that does not exist, or an output file that exists (unless ``force``)."""
    if file is not None:
        check_input_file(file)
    if out is not None and out != STDOUT:
        _kind(out, "output")
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


_NOT_FILES = {
    stat.S_ISDIR: "a folder",
    stat.S_ISFIFO: "a named pipe (FIFO)",
    stat.S_ISSOCK: "a socket",
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
}


def check_input_file(file: Path) -> None:
    """A readable regular file of a known type; else an error that says what ``file`` is
    (missing, a folder, a FIFO, unreadable, an unknown type). A FIFO is refused: the file is
    read twice (its lines counted for the progress bar, then predicted)."""
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(2, "file not found", str(file)) from None
    except OSError as err:
        raise UnreadableFileError(f"{file}: cannot be read ({err.strerror or err})") from None
    for test, what in _NOT_FILES.items():
        if test(mode):
            raise UnreadableFileError(f"{file}: is {what}, not a regular file; --file reads a file")
    if not os.access(file, os.R_OK):
        raise UnreadableFileError(f"{file}: cannot be read (permission denied)")
    _kind(file, "input")


def pick_text_column(
    columns: list[str], requested: str | None, where: str, project: str | None = None
) -> str:
    """The requested column, else the project's (``data.text_column``) where the file has
    it, else ``text``, else the only column."""
    if requested is not None:
        if requested not in columns:
            raise DataError(f"{where}: no column {requested!r} (columns: {', '.join(columns)})")
        return requested
    if project is not None and project in columns:
        return project
    if "text" in columns:
        return "text"
    if len(columns) == 1:
        return columns[0]
    raise DataError(
        f"{where}: no column 'text' among {', '.join(columns)}; pass --text-column NAME"
    )


#: a chunk of a file: its texts, and the columns kept beside them (None: none)
Chunk = tuple[list[str], "pd.DataFrame | None"]


@dataclass
class BytesRead:
    """The bytes of a file its chunks have read so far (a CSV file's progress)."""

    size: int
    done: int = 0


@dataclass
class TextSource:
    """A file of texts: ``total`` rows when known cheaply, ``chunks()`` of texts with the
    columns ``kept`` beside them; ``bytes_read``: a file whose progress is counted in bytes
    (a CSV file: its rows are unknown until read)."""

    path: Path
    total: int | None
    chunks: Callable[[], Iterator[Chunk]]
    kept: list[str] = field(default_factory=list)
    #: a table's text column and all its columns in the file's order (None, []: a .txt file)
    column: str | None = None
    columns: list[str] = field(default_factory=list)
    bytes_read: BytesRead | None = None


def _txt_chunks(path: Path, cap: LineCap) -> Iterator[Chunk]:
    chunk: list[str] = []
    with open(path, "rb") as handle:
        for text in bounded_lines(handle, path, cap):
            chunk.append(text)
            if len(chunk) >= CHUNK_ROWS:
                yield chunk, None
                chunk = []
    if chunk:
        yield chunk, None


def _capped(texts: list[str], first_row: int, path: Path, cap: LineCap) -> list[str]:
    """``texts`` (rows ``first_row``.. of ``path``, 1-based) held to ``cap``."""
    return [cap.apply(t, f"{path} row {first_row + i}") for i, t in enumerate(texts)]


def _count_lines(path: Path) -> int:
    lines, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def _csv_chunks(
    path: Path, column: str, sep: str, cap: LineCap, kept: list[str], rows: int, read: BytesRead
) -> Iterator[Chunk]:
    """The texts of ``column`` and the ``kept`` columns, a chunk of whole records at a time
    (``csv_records.csv_chunks``: bounded memory whatever lines a quoted field spans); ``read``
    counts the file's bytes up to each chunk's end (each chunk repeats the header record)."""
    row = 1
    try:
        with closing(csv_records(path, sep, cap)) as records:
            header = len(next(records, b""))
        read.done = header
        for data in csv_chunks(path, sep, cap, rows):
            read.done = min(read.size, read.done + max(0, len(data) - header))
            frame = pd.read_csv(
                io.BytesIO(data),
                sep=sep,
                usecols=[column, *kept],
                dtype=str,  # kept columns as written (ids keep their leading zeros)
                keep_default_na=False,
                encoding="utf-8",
            )
            del data
            if len(frame):
                extra = frame[kept].reset_index(drop=True) if kept else None
                yield _capped(frame[column].tolist(), row, path, cap), extra
            row += len(frame)
    except UnicodeDecodeError as err:
        raise DataError(
            f"{path}: not valid UTF-8 ({err.reason}); re-save the file as UTF-8"
        ) from None
    except (pd.errors.ParserError, ValueError) as err:
        raise DataError(f"{path}: not a readable CSV file ({str(err).splitlines()[0]})") from None


def _parquet_chunks(
    parquet, column: str, path: Path, cap: LineCap, kept: list[str], rows: int
) -> Iterator[Chunk]:
    """A parquet file's texts and ``kept`` columns, ``rows`` at a time; a page that cannot
    be read (damaged, a bad compression) is a ``DataError`` naming the input."""
    row = 1
    batches = parquet.iter_batches(batch_size=rows, columns=[column, *kept])
    while True:
        try:
            batch = next(batches, None)
        except Exception as err:  # pyarrow raises OSError, ArrowInvalid, ... for a bad page
            raise DataError(
                f"{path}: not a readable parquet file from row {row:,} ({one_line(err, 1)})"
            ) from None
        if batch is None:
            return
        texts = ["" if t is None else str(t) for t in batch.column(column).to_pylist()]
        extra = batch.select(kept).to_pandas() if kept else None
        yield _capped(texts, row, path, cap), extra
        row += len(texts)


def open_source(
    path: Path,
    text_column: str | None = None,
    cap: LineCap | None = None,
    keep: list[str] | None = ALL_COLUMNS,
    project_column: str | None = None,
    rows: int | None = None,
) -> TextSource:
    """Open a text file for chunked reading (see the module docstring for the formats);
    every text held to ``cap`` (default: 10,000 characters, longer ones refused); the
    columns ``keep`` names (``ALL_COLUMNS``: all but the text) read beside the texts.
    ``project_column``: the project's text column, used where the file has it. A table's
    chunks hold at most ``rows`` rows (default ``CHUNK_ROWS``)."""
    cap = cap or LineCap()
    rows = rows or CHUNK_ROWS
    kind = _kind(path, "input")
    if kind == "txt":
        if text_column is not None:
            raise UserError("--text-column applies to CSV and parquet files, not .txt")
        if keep:
            raise UserError("--keep applies to CSV and parquet files, not .txt")
        return TextSource(path, _count_lines(path), lambda: _txt_chunks(path, cap))
    if kind == "parquet":
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(path)
        except Exception as err:  # pyarrow raises several types for a damaged file
            raise DataError(f"{path}: not a readable parquet file ({err})") from None
        names = parquet.schema_arrow.names
        column = pick_text_column(names, text_column, str(path), project_column)
        kept = kept_columns(names, column, keep, str(path))
        return TextSource(
            path,
            parquet.metadata.num_rows,
            lambda: _parquet_chunks(parquet, column, path, cap, kept, rows),
            kept,
            column,
            list(names),
        )
    sep = csv_separator(path)
    names = csv_header(path, sep, cap)
    column = pick_text_column(names, text_column, str(path), project_column)
    kept = kept_columns(names, column, keep, str(path))
    read = BytesRead(path.stat().st_size)
    return TextSource(
        path,
        None,
        lambda: _csv_chunks(path, column, sep, cap, kept, rows, read),
        kept,
        column,
        names,
        read,
    )


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
    kind = _kind(out, "output")
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
