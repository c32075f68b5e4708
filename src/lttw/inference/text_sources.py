"""Files of texts read in chunks (``lttw predict --file``, ``lttw predict --engine ray``): a chunk
of at most ``CHUNK_ROWS`` rows at a time (and for CSV ``csv_records.CHUNK_BYTES``), so memory
stays bounded however large the file is.

Inputs:  ``.txt`` (one text per line, each read in bounded pieces: ``text_lines``),
         ``.csv`` / ``.tsv`` (a text column; split into records in bounded reads, a record
         of more than ``csv_record_bytes`` refused, and parsed by ``pandas.read_csv`` a
         chunk of records at a time: ``csv_records``),
         ``.parquet`` / ``.pq`` (``ParquetFile.iter_batches``). Every text is held to a
         ``LineCap`` (``--max-chars``, default 10,000 like the server): refused with its
         line / row number, or cut with ``--truncate``.
Columns: the text column, and the file's other columns kept beside it (all of them, or
         those ``--keep`` names; CSV ones as text, as written).
Text column: ``--text-column``, else the project's ``data.text_column`` where the file has
         it, else ``text``, else the only column.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from lttw.data.tables import CSV_SUFFIXES, PARQUET_SUFFIXES, csv_separator
from lttw.errors import DataError, UserError, one_line
from lttw.inference.csv_records import csv_chunks, csv_header, csv_records
from lttw.inference.prediction_table import ALL_COLUMNS, kept_columns
from lttw.inference.text_lines import LineCap, bounded_lines
from lttw.io import UnreadableFileError

#: rows read, predicted and written at a time (tests make it small)
CHUNK_ROWS = 8192

TXT_SUFFIXES = (".txt",)


def file_kind(path: str | Path, what: str) -> str:
    """``path``'s kind by its suffix: txt, csv (``.csv``, ``.tsv``) or parquet; ``what``:
    "input" or "output" (an output is never .txt); else a ``UserError`` naming the types."""
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
    file_kind(file, "input")


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
    kind = file_kind(path, "input")
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
