"""Reading one data table (parquet / CSV / TSV / JSON Lines), selecting its text and label columns, and
encoding the labels; every failure is a one-line ``DataError`` naming the file, column or row."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import numpy as np
import pandas as pd

from lttw.errors import DataError

#: the table files read and written anywhere (datasets, `lttw data check`, `lttw predict --file`)
PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".tsv")  # .tsv: tab-separated
JSONL_SUFFIXES = (".jsonl",)  # one JSON object per line (a list of labels is a JSON array)
TABLE_SUFFIXES = PARQUET_SUFFIXES + CSV_SUFFIXES + JSONL_SUFFIXES


#: rows of a CSV file parsed at a time (``_read_csv``)
CSV_CHUNK_ROWS = 50_000


def csv_separator(path: Path) -> str:
    return "\t" if path.suffix.lower() == ".tsv" else ","


def read_table(path: Path) -> pd.DataFrame:
    """Read one parquet / CSV / TSV / JSON Lines file; every failure is a one-line
    ``DataError``."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if path.suffix.lower() in PARQUET_SUFFIXES:
        try:
            return pd.read_parquet(path)
        except Exception as err:  # pyarrow raises several types for a damaged file
            raise DataError(
                f"{path}: not a readable parquet file "
                f"({str(err).splitlines()[0] if str(err) else type(err).__name__})"
            ) from None
    if path.suffix.lower() in JSONL_SUFFIXES:
        try:
            raw = path.read_bytes()
        except OSError as err:
            raise DataError(
                f"{path}: cannot be read ({err.strerror or type(err).__name__})"
            ) from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise _not_utf8(path, err.start, raw.count(b"\n", 0, err.start) + 1, err.reason)
        return _read_json_lines(path, text)
    try:  # pandas reads the file in blocks: no whole copy of it as bytes or text
        return _read_csv(path)
    except UnicodeDecodeError:
        raise _first_bad_utf8(path) from None
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty") from None
    except (pd.errors.ParserError, ValueError) as err:
        raise DataError(f"{path}: not a readable CSV file ({str(err).splitlines()[0]})") from None


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV file read ``CSV_CHUNK_ROWS`` rows at a time (the parser's own buffers stay
    small), the chunks joined; where pandas typed a column differently in two chunks (a
    label column of integers with a gap in one), the file is read again whole, so that every
    column has the type one reading of the whole file gives it."""
    kw = {"sep": csv_separator(path), "encoding": "utf-8-sig"}
    header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False, **kw)
    names = header.iloc[0].tolist() if len(header) else []
    repeated = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if repeated is not None:  # pandas would rename the second one silently (text.1)
        first, second = [i + 1 for i, n in enumerate(names) if n == repeated][:2]
        raise DataError(
            f"{path}: the header names column {repeated!r} twice (columns {first} and "
            f"{second}); rename one"
        )
    with pd.read_csv(path, chunksize=CSV_CHUNK_ROWS, **kw) as reader:
        chunks = list(reader)
    if len(chunks) == 1:
        return chunks[0]
    if not chunks or any(not c.dtypes.equals(chunks[0].dtypes) for c in chunks[1:]):
        del chunks
        return pd.read_csv(path, **kw)
    return pd.concat(chunks, ignore_index=True)


def _not_utf8(path: Path, offset: int, line: int, reason: str) -> DataError:
    return DataError(
        f"{path}: not valid UTF-8 at byte {offset} (line {line}, about data row "
        f"{max(line - 1, 1)}): {reason}; re-save the file as UTF-8"
    )


def _first_bad_utf8(path: Path) -> DataError:
    """The error naming the first byte of ``path`` that is not UTF-8, found in 1 MiB reads."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, line = 0, 1
    with open(path, "rb") as handle:
        while True:
            block = handle.read(1 << 20)
            pending = len(decoder.getstate()[0])  # bytes of a character the last block cut
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as err:
                at = err.start - pending  # in this block; below 0: begun in the last one
                newlines = block.count(b"\n", 0, max(at, 0))
                return _not_utf8(path, offset + at, line + newlines, err.reason)
            if not block:
                return DataError(f"{path}: not valid UTF-8; re-save the file as UTF-8")
            offset += len(block)
            line += block.count(b"\n")


def _read_json_lines(path: Path, text: str) -> pd.DataFrame:
    """One JSON object per non-blank line; a bad line is named by its number."""
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            raise DataError(f"{path}: line {number} is not valid JSON ({err})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}: line {number} is not a JSON object")
        rows.append(row)
    if not rows:
        raise DataError(f"{path}: the file is empty")
    return pd.DataFrame.from_records(rows)


class ColumnError(DataError):
    """A text or label column is missing. The message ends with the fix in pipeline terms
    (``set data.text_column``); a command with its own column options says ``fix_with``."""

    def __init__(self, problem: str, missing: list[str], hint: str = ""):
        self.problem, self.missing, self.hint = problem, missing, hint
        super().__init__(self.fix_with("set " + self.names("data.{}_column")))

    def names(self, pattern: str) -> str:
        """The missing columns' settings, e.g. ``names("--{}-column")``, joined by "and"."""
        return " and ".join(pattern.format(w) for w in self.missing)

    def fix_with(self, fix: str) -> str:
        """The message with ``fix`` (what to set or pass) in place of the pipeline's."""
        return f"{self.problem}; {fix}{self.hint}"


def select_columns(
    frame: pd.DataFrame, where: str, text_columns: tuple[str, ...], label_column: str
) -> pd.DataFrame:
    """Frame with columns ``text`` (several text columns joined by a space) and ``label``."""
    missing_text = [c for c in text_columns if c not in frame.columns]
    missing_label = label_column not in frame.columns
    if missing_text or missing_label:
        what = (
            [f"no text column {', '.join(map(repr, missing_text))}"] if missing_text else []
        ) + ([f"no label column {label_column!r}"] if missing_label else [])
        raise ColumnError(
            f"{where}: {' and '.join(what)} (columns: {', '.join(map(str, frame.columns))})",
            [w for w, gone in (("text", missing_text), ("label", missing_label)) if gone],
            _header_hint(frame, missing_text, missing_label),
        )
    frame = frame.assign(
        **{c: _decoded(frame[c], where, c) for c in dict.fromkeys((*text_columns, label_column))}
    )
    text = frame[text_columns[0]]
    for column in text_columns[1:]:
        text = (
            text.fillna("").astype("str").str.cat(frame[column].fillna("").astype("str"), sep=" ")
        )
    if len(text_columns) > 1:
        text = text.str.strip()
    return pd.DataFrame({"text": text, "label": frame[label_column]})


def _header_hint(frame: pd.DataFrame, missing_text: list, missing_label: bool) -> str:
    """Why a table may lack every expected column: another delimiter, or no header line."""
    columns = [str(c) for c in frame.columns]
    if len(columns) == 1:
        for sep, name in ((";", "semicolon"), ("\t", "tab"), ("|", "pipe")):
            if sep in columns[0]:
                return (
                    f"; the header {columns[0]!r} looks {name}-separated: .csv files must be "
                    "comma-separated and .tsv files tab-separated"
                )
    if missing_text and missing_label:
        return (
            "; if the first line is data, the file has no header line: add one naming the columns"
        )
    return ""


def _decoded(column: pd.Series, where: str, name) -> pd.Series:
    """A column of ``bytes`` (a parquet binary column) decoded as UTF-8; other columns as is."""
    if column.dtype != object:
        return column
    is_bytes = column.map(lambda v: isinstance(v, (bytes, bytearray)))
    if not is_bytes.any():
        return column
    out = column.copy()
    for row, value in column[is_bytes].items():
        try:
            out[row] = bytes(value).decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(
                f"{where}, column {name}: row {row} is not valid UTF-8 at byte "
                f"{err.start}: {err.reason}; store the texts as UTF-8 strings"
            ) from None
    return out


def encode_labels(
    values: pd.Series, known_classes: list[str] | None, where: str
) -> tuple[np.ndarray, list[str], list]:
    """Map labels to ids 0..p-1: (ids int64 (n,), class names, original value per id).

    Integer (or integral float) labels that all lie in 0..len(known_classes)-1 are taken as the
    manifest's ids, and strings that are all manifest class names map to their position; any
    other labels are sorted and numbered, their values serving as names.
    """
    if pd.api.types.is_bool_dtype(values):
        values = values.astype(np.int64)
    if pd.api.types.is_numeric_dtype(values):
        floats = values.to_numpy(dtype=np.float64)
        bad = ~np.isfinite(floats) | (floats != np.round(floats))
        if bad.any():
            i = int(np.argmax(bad))
            raise DataError(
                f"{where}: label {float(floats[i])!r} (row {values.index[i]}) is "
                "not an integer; labels must be integers, integral floats or strings"
            )
        ints = floats.astype(np.int64)
        if known_classes and ints.min() >= 0 and ints.max() < len(known_classes):
            return ints, list(known_classes), list(range(len(known_classes)))
        distinct = np.unique(ints)
        return np.searchsorted(distinct, ints), [str(u) for u in distinct], distinct.tolist()
    names = values.astype("str").to_numpy(dtype=object)
    unique = sorted(set(names))
    if known_classes and set(unique) <= set(known_classes):
        unique = list(known_classes)
    index = {name: i for i, name in enumerate(unique)}
    return np.fromiter((index[v] for v in names), np.int64, len(names)), unique, list(unique)
