"""A labelled file scored against a model (``lttw evaluate``): its texts, and its labels as
the model's class ids.

The file is a parquet / CSV / TSV / JSON Lines table (``tables.read_table``) of at most
``MAX_BYTES`` bytes and ``MAX_ROWS`` rows, with a text and a label column. A parquet file
can decode to far more than it weighs (a dictionary page, a compressed run): its row count
and uncompressed size come from its metadata before anything is read, then its two columns
are read ``BATCH_ROWS`` rows at a time, each batch's decoded size measured (a dictionary
column's from its dictionary, before it is expanded) and the file refused past
``MAX_TEXT_BYTES``. A label is a
class name of the model, or (where none of the values is one) a class id 0..p-1 as the
pipeline's samples store them. A multi-label model reads a set of labels per text: a list
(parquet, JSON Lines) or one cell of names joined by ``label_delimiter`` (CSV). A label the
model does not know, an empty label or text, is a ``DataError`` naming it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lttw.data.label_sets import indicator_matrix
from lttw.data.tables import PARQUET_SUFFIXES, TABLE_SUFFIXES, ColumnError, read_table
from lttw.errors import DataError, one_line

MAX_BYTES = 1 << 30
MAX_ROWS = 1_000_000
#: bytes the text and label cells of a parquet file may decode to, and rows read at a time
MAX_TEXT_BYTES = 256 << 20
BATCH_ROWS = 4096
DEFAULT_DELIMITER = "|"


def read_labelled_file(
    path: Path,
    classes: list[str],
    multi_label: bool,
    text_column: str = "text",
    label_column: str = "label",
    label_delimiter: str | None = None,
    max_rows: int = MAX_ROWS,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(the file's rows, texts in column ``text``; labels as ``(n,)`` class ids or a
    multi-label ``(n, p)`` indicator matrix)."""
    path = Path(path)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise DataError(
            f"{path}: unsupported file type {path.suffix or '(none)'!r}; use "
            + ", ".join(TABLE_SUFFIXES)
        )
    if path.is_file() and path.stat().st_size > MAX_BYTES:
        raise DataError(f"{path}: larger than {MAX_BYTES >> 20:,} MiB; evaluate a sample of it")
    if path.suffix.lower() in PARQUET_SUFFIXES and path.is_file():
        frame = _read_parquet(path, text_column, label_column, max_rows)
    else:
        frame = read_table(path)
        _check_columns(path, list(frame.columns), text_column, label_column)
    if len(frame) > max_rows:
        raise DataError(f"{path}: {len(frame):,} rows, more than {max_rows:,}; evaluate a sample")
    if not len(frame):
        raise DataError(f"{path}: no rows")
    texts = frame[text_column]
    empty = texts.isna() | (texts.astype(str).str.strip() == "")
    if empty.any():
        raise DataError(f"{path}: row {_row(frame, empty)} has no text ({text_column!r} empty)")
    frame = frame.assign(text=texts.astype(str))
    values = frame[label_column]
    if isinstance(values.dtype, pd.CategoricalDtype):  # a dictionary column: its values
        values = values.astype(object)
    if values.isna().any():
        raise DataError(f"{path}: row {_row(frame, values.isna())} has no label")
    if multi_label:
        return frame, _label_sets(values, classes, label_delimiter or DEFAULT_DELIMITER, path)
    return frame, _label_ids(values, classes, path)


def _check_columns(path: Path, columns: list, text_column: str, label_column: str) -> None:
    missing = [c for c in (text_column, label_column) if c not in columns]
    if missing:
        err = ColumnError(
            f"{path}: no column {' and '.join(map(repr, missing))} (columns: "
            f"{', '.join(map(str, columns))})",
            ["text" if c == text_column else "label" for c in missing],
        )
        raise DataError(err.fix_with("pass " + err.names("--{}-column"))) from None


def _too_much_text(path: Path, size: int) -> DataError:
    return DataError(
        f"{path}: its text and label columns decode to {size / 2**20:,.0f} MiB or more, "
        f"more than {MAX_TEXT_BYTES >> 20:,} MiB of text; evaluate a sample"
    )


def _decoded_bytes(array) -> int:
    """Bytes ``array`` takes decoded; a dictionary array's from its dictionary and indices,
    without expanding it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        value = array.type.value_type
        if pa.types.is_string(value) or pa.types.is_binary(value):
            lengths = pc.take(pc.binary_length(array.dictionary), array.indices)
            return int(pc.sum(lengths).as_py() or 0) + 4 * len(array)
    return int(array.nbytes)


def _read_parquet(path: Path, text_column: str, label_column: str, max_rows: int):
    """The text and label columns of a parquet file, within ``max_rows`` and
    ``MAX_TEXT_BYTES`` (module docstring)."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        _check_columns(path, names, text_column, label_column)
        meta = parquet.metadata
        if meta.num_rows > max_rows:
            raise DataError(
                f"{path}: {meta.num_rows:,} rows, more than {max_rows:,}; evaluate a sample"
            )
        wanted = [names.index(text_column), names.index(label_column)]
        size = sum(
            meta.row_group(g).column(c).total_uncompressed_size
            for g in range(meta.num_row_groups)
            for c in wanted
            if c < meta.row_group(g).num_columns
        )
        if size > MAX_TEXT_BYTES:
            raise _too_much_text(path, size)
        strings = [
            n for n in dict.fromkeys((text_column, label_column))
            if _is_string(parquet.schema_arrow.field(n).type)
        ]  # fmt: skip
        parquet = pq.ParquetFile(path, read_dictionary=strings)  # expanded only once measured
        frames, size = [], 0
        for batch in parquet.iter_batches(BATCH_ROWS, columns=[text_column, label_column]):
            size += sum(_decoded_bytes(column) for column in batch.columns)
            if size > MAX_TEXT_BYTES:
                raise _too_much_text(path, size)
            frames.append(batch.to_pandas())
    except DataError:
        raise
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise DataError(f"{path}: not a readable parquet file ({one_line(err, 1)})") from None
    if not frames:
        return pd.DataFrame({text_column: [], label_column: []})
    return pd.concat(frames, ignore_index=True)


def _is_string(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _row(frame: pd.DataFrame, mask: pd.Series) -> int:
    """The 1-based data row of the first true value of ``mask``."""
    return int(np.argmax(mask.to_numpy())) + 1


def _label_ids(values: pd.Series, classes: list[str], path: Path) -> np.ndarray:
    if values.map(lambda v: isinstance(v, (list, tuple, np.ndarray))).any():
        raise DataError(
            f"{path}: a list of labels per text, but the model gives one label per text"
        )
    names = values.map(str)
    index = {c: i for i, c in enumerate(classes)}
    if names.isin(list(index)).any() or not pd.api.types.is_integer_dtype(values):
        unknown = sorted(set(names) - set(index))
        if unknown:
            raise DataError(
                f"{path}: labels {unknown[:5]} are not the model's classes "
                f"({', '.join(classes[:10])}{', ...' if len(classes) > 10 else ''})"
            )
        return names.map(index).to_numpy(np.int64)
    ids = values.to_numpy(np.int64)
    if ids.min() < 0 or ids.max() >= len(classes):
        raise DataError(f"{path}: label ids outside 0..{len(classes) - 1} (the model's classes)")
    return ids


def _label_sets(values: pd.Series, classes: list[str], delimiter: str, path: Path) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    lists = []
    for row, value in enumerate(values, start=1):
        if isinstance(value, str):
            items: list = [v.strip() for v in value.split(delimiter) if v.strip()]
        elif np.ndim(value) == 1:
            items = list(value)
        else:
            items = [value]
        ids = []
        for item in items:
            key = str(item)
            if key in index:
                ids.append(index[key])
            elif isinstance(item, (int, np.integer)) and 0 <= int(item) < len(classes):
                ids.append(int(item))
            else:
                raise DataError(
                    f"{path}: row {row}: label {key!r} is not one of the model's classes"
                )
        lists.append(ids)
    return indicator_matrix(lists, len(classes))
