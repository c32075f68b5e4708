"""Texts of a ``.txt`` file, one per line, read with a cap on each line's length.

``bounded_lines`` reads the file in binary with ``readline(limit)``: one call never returns
more than ``4 * max_chars + 2`` bytes (``max_chars`` characters of up to 4 UTF-8 bytes, and
``\\r\\n``), so a line of a gigabyte without a newline costs that much memory, not a
gigabyte. A line longer than ``max_chars`` characters is refused with an error naming its
line number, or with ``truncate`` cut to its first ``max_chars`` characters (the rest of the
line is skipped in bounded reads; a CSV file's records are bounded by ``csv_records``). A
byte sequence that is not UTF-8 is reported with the number of the line it is on. Lines end at ``\\n`` (a ``\\r`` before it is dropped); a UTF-8
byte order mark at the start is skipped.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from lttw.errors import DataError, UserError

#: the server's cap on one text (``lttw serve --max-text-chars``), and ``--max-chars``'s default
MAX_CHARS = 10_000
_BOM = codecs.BOM_UTF8
_SKIP_BLOCK = 1 << 20


@dataclass
class LineCap:
    """At most ``max_chars`` characters per text; longer ones refused, or cut (``truncate``).
    ``cut`` counts the texts that were cut."""

    max_chars: int = MAX_CHARS
    truncate: bool = False
    cut: int = 0

    def apply(self, text: str, where: str) -> str:
        """``text`` within the cap (cut, and counted), or a DataError naming ``where``."""
        if len(text) <= self.max_chars:
            return text
        self.refuse(where)
        self.cut += 1
        return text[: self.max_chars]

    def refuse(self, where: str) -> None:
        """Raise the DataError for a text over the cap at ``where`` (unless ``truncate``)."""
        if not self.truncate:
            raise DataError(
                f"{where}: longer than --max-chars {self.max_chars:,} characters; split the "
                "text, raise --max-chars, or pass --truncate to cut it"
            )


def _skip_rest_of_line(handle: BinaryIO) -> None:
    """Read, in bounded blocks, up to and including the next newline."""
    while block := handle.readline(_SKIP_BLOCK):
        if block.endswith(b"\n"):
            return


def _decode(raw: bytes, complete: bool, path: Path, line_no: int) -> str:
    """UTF-8 text of one line's bytes (``complete``: False where the bytes stop mid-line,
    so a character cut at the end is dropped rather than reported)."""
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(raw, final=complete)
    except UnicodeDecodeError as err:
        raise DataError(
            f"{path}: line {line_no} is not valid UTF-8 ({err.reason} at byte {err.start + 1} "
            "of the line); re-save the file as UTF-8"
        ) from None


def bounded_lines(handle: BinaryIO, path: Path, cap: LineCap) -> Iterator[str]:
    """The texts of a binary ``handle`` (file ``path``, for messages), one per line, each
    at most ``cap.max_chars`` characters (see the module docstring)."""
    limit = 4 * cap.max_chars + 2
    line_no = 0
    while raw := handle.readline(limit + 1):
        line_no += 1
        if line_no == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        complete = raw.endswith(b"\n")
        if not complete and len(raw) > limit:  # more bytes than any text within the cap
            cap.refuse(f"{path} line {line_no}")
            _skip_rest_of_line(handle)
        text = _decode(raw, complete or len(raw) <= limit, path, line_no)
        yield cap.apply(text.rstrip("\r\n"), f"{path} line {line_no}")


def as_texts(texts) -> list[str]:
    """``texts`` as a list of strings: one string is one text (not its characters); any
    other item than a string is a ``UserError`` naming its position and type."""
    if isinstance(texts, str):
        return [texts]
    try:
        out = list(texts)
    except TypeError:
        raise UserError(f"texts: a list of strings, got {type(texts).__name__}") from None
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise UserError(f"texts[{i}]: a string, got {type(text).__name__}")
    return out
