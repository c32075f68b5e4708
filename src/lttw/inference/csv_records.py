"""A CSV / TSV file read record by record in bounded memory, for ``lttw predict --file``.

pandas reads a field whole, and a quoted field may hold newlines: a record can span any
number of short lines, so a bound on lines bounds nothing. ``csv_records`` splits the file
into records itself, in 1 MiB reads, following the quoting rule of pandas' parser (a ``"``
opens a quoted field only at the start of a field; inside one, ``""`` is a quote and a
line end is text; outside one a record ends at ``\n``, ``\r\n`` or a lone ``\r``, as
pandas' C parser ends it), and refuses a record longer than ``csv_record_bytes`` (the text at 4 bytes
a character, plus 1 MiB for the other columns) as soon as it is seen to be, naming the line
it starts on; with ``--truncate`` too (a CSV record is not cut). ``csv_chunks`` groups the
records into chunks of at most a number of records and ``CHUNK_BYTES`` bytes (or one
record, where one is larger), each with the header record, for pandas to parse: however the
file is shaped, memory holds one chunk and one record being read, never the file.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Generator, Iterator
from pathlib import Path

import pandas as pd

from lttw.errors import DataError
from lttw.inference.text_lines import LineCap

#: bytes a CSV record may hold beyond its text's 4 * max_chars (the other columns)
CSV_OTHER_COLUMNS_BYTES = 1 << 20
#: bytes one chunk of records holds at most (tests make it small)
CHUNK_BYTES = 2 << 20
_BLOCK = 1 << 20
_QUOTE = ord('"')
#: a record's end outside quotes: pandas' C parser ends one at \n, \r\n and a lone \r
_LINE_END = re.compile(rb"\r\n?|\n")


def _line_ends(buf: bytes | bytearray, start: int, end: int) -> int:
    """Line ends (``\n``, ``\r\n``, a lone ``\r``) in ``buf[start:end]``."""
    crlf = buf.count(b"\r\n", start, end)
    return buf.count(b"\n", start, end) + buf.count(b"\r", start, end) - crlf


def csv_record_bytes(cap: LineCap) -> int:
    """The longest CSV record (bytes) read: the text at 4 bytes a character, plus 1 MiB."""
    return 4 * cap.max_chars + CSV_OTHER_COLUMNS_BYTES


class _Scanner:
    """Record ends in a buffer that starts at a record's start, found incrementally."""

    def __init__(self, sep: str):
        self.field_starts = (ord(sep), ord("\n"), ord("\r"))
        self.in_quotes = False
        self.pos = 0  # where scanning goes on in the buffer

    def ends(self, buf: bytes | bytearray, eof: bool) -> list[int]:
        """Offsets just past each record's line end found from ``pos`` on."""
        out: list[int] = []
        n, pos = len(buf), self.pos
        while pos < n:
            q = buf.find(b'"', pos)
            if self.in_quotes:
                if q < 0:
                    pos = n
                elif q + 1 == n and not eof:  # "" or the closing quote? the next read says
                    break
                elif q + 1 < n and buf[q + 1] == _QUOTE:
                    pos = q + 2
                else:
                    self.in_quotes, pos = False, q + 1
                continue
            stop = n if q < 0 else q
            for end in _LINE_END.finditer(buf, pos, stop):
                if end.end() == n and not eof and buf[n - 1] == ord("\r"):
                    self.pos = end.start()  # \r or \r\n? the next read says
                    return out
                out.append(end.end())
            if q < 0:
                pos = n
            else:  # a quote opens a quoted field only at a field's start; else it is text
                self.in_quotes = q == 0 or buf[q - 1] in self.field_starts
                pos = q + 1
        self.pos = pos
        return out


def _too_long(path: Path, line: int, limit: int, cap: LineCap) -> DataError:
    return DataError(
        f"{path} line {line}: a CSV record longer than {limit:,} bytes (--max-chars "
        f"{cap.max_chars:,} characters plus 1 MiB for other columns; a quoted field may span "
        "lines); a CSV record is not cut: split it, raise --max-chars, or use a .txt or "
        "parquet file"
    )


def csv_records(path: Path, sep: str, cap: LineCap) -> Generator[bytes, None, None]:
    """The records of a CSV file (each with its line end; a UTF-8 byte order mark at the
    start dropped), each within ``csv_record_bytes``, in bounded reads (module docstring)."""
    limit = csv_record_bytes(cap)
    scanner = _Scanner(sep)
    buf, line = bytearray(), 1  # buf: from the start of the record being read
    with open(path, "rb") as handle:
        block = handle.read(_BLOCK).removeprefix(codecs.BOM_UTF8)
        while True:
            eof = not block
            buf += block
            start = 0
            for end in scanner.ends(buf, eof):
                if end - start > limit:
                    raise _too_long(path, line + _line_ends(buf, 0, start), limit, cap)
                yield bytes(buf[start:end])
                start = end
            line += _line_ends(buf, 0, start)
            del buf[:start]
            scanner.pos -= start
            if len(buf) > limit:  # an unfinished record already past the bound
                raise _too_long(path, line, limit, cap)
            if eof:
                if buf:
                    yield bytes(buf)  # the last record, without a line end
                return
            block = handle.read(_BLOCK)


def csv_chunks(path: Path, sep: str, cap: LineCap, max_rows: int) -> Iterator[bytes]:
    """The file as chunks of whole records, each led by the header record (none for an
    empty file): at most ``max_rows`` records and ``CHUNK_BYTES`` bytes a chunk, or one
    record where that one is larger."""
    records = csv_records(path, sep, cap)
    header = next(records, None)
    if header is None:
        return
    if not header.endswith((b"\n", b"\r")):
        header += b"\n"
    chunk: list[bytes] = []
    size = 0
    for record in records:
        if chunk and (len(chunk) >= max_rows or size + len(record) > CHUNK_BYTES):
            yield header + b"".join(chunk)
            chunk, size = [], 0
        chunk.append(record)
        size += len(record)
    yield header + b"".join(chunk)  # the header alone, for a file without rows


def csv_header(path: Path, sep: str, cap: LineCap) -> list[str]:
    """The column names of a CSV file's header record (read within the record bound)."""
    records = csv_records(path, sep, cap)
    try:
        first = next(records, b"")
    finally:
        records.close()
    try:
        header = pd.read_csv(io.BytesIO(first), sep=sep, nrows=0, encoding="utf-8").columns
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{path}: not a readable CSV file ({err})") from None
    return [str(c) for c in header]
