"""`lttw predict --file` on CSV files whose quoted fields span lines: records (not lines) are
held to the byte bound, even with --truncate, naming the line the record starts on; memory
stays bounded by a chunk of records however the file is shaped (a subprocess's peak RSS on a
generated file of tens of MB); and the records split the file exactly as pandas does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support.cli_runner import invoke

from lttw.inference import csv_records, text_sources
from lttw.inference.text_lines import LineCap

REPO = Path(__file__).resolve().parents[2]


def spanning_record_file(path: Path, field_bytes: int, records: int = 1) -> Path:
    """``id,text`` rows whose text is a quoted field of ``field_bytes`` in 100-byte lines."""
    line = b"y" * 99 + b"\n"
    with open(path, "wb") as handle:
        handle.write(b"id,text\nfirst,short text\n")
        for i in range(records):
            handle.write(b'%d,"' % i + line * (field_bytes // 100) + b'"\n')
    return path


def test_a_quoted_field_spanning_lines_past_the_bound_is_refused_even_with_truncate(
    fixed_model, tmp_path
):
    """--max-chars 10: a record may hold 1 MiB + 40 bytes; a 1.5 MB field in 100-byte lines
    is refused (before it is read whole), with or without --truncate."""
    path = spanning_record_file(tmp_path / "in.csv", 1_500_000)
    for extra in ([], ["--truncate"]):
        args = ["predict", "--file", path, "--out", tmp_path / "o.csv", "--max-chars", "10"]
        result = invoke(*args, *extra)
        assert result.exit_code == 3, result.output
        line = result.stderr.strip().splitlines()[-1]
        assert f"{path} line 3: a CSV record longer than 1,048,616 bytes" in line, line
        assert "a CSV record is not cut" in line
        assert not (tmp_path / "o.csv").exists()


PEAK = """
import io, resource, sys
from pathlib import Path
import pandas as pd
from lttw.inference.text_sources import open_source
from lttw.inference.text_lines import LineCap
pd.read_csv(io.StringIO("a,b\\n1,2\\n"))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rows = sum(len(t) for t, _ in open_source(Path(sys.argv[1]), "text", LineCap(truncate=True)).chunks())
print(rows, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
"""


def test_memory_stays_bounded_by_a_chunk_whatever_the_shape(tmp_path):
    """32 records of a 1 MB quoted field spanning 10,000 lines each (32 MB): each within the
    byte bound, cut to 10,000 characters by --truncate. Read in chunks of at most
    ``CHUNK_BYTES`` (2 MiB): peak memory grows by about 20 MiB (as for 80 such records),
    where reading the file in one pandas chunk of rows grew it by 96 MiB."""
    path = spanning_record_file(tmp_path / "big.csv", 1_000_000, records=32)
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows, grown_mib = done.stdout.split()
    assert int(rows) == 33
    assert float(grown_mib) < 48, f"peak memory grew by {grown_mib} MiB"


TRICKY = (
    "text,label,note\r\n"
    '"a field with\na newline",x,"say ""hi"""\r\n'
    'plain text,y,5" screen\r\n'
    '"quoted, with a comma",x,\r\n'
    '"ends ""quoted"" then more" tail,y,n\r\n'
    "\r\n"
    'a "quote" inside,x,"multi\n\nline"\r\n'
    "last row without newline,y,z"
)


@pytest.mark.parametrize("sep", [",", "\t"])
def test_records_split_the_file_as_pandas_does(tmp_path, monkeypatch, sep):
    """Chunks of two records and of 8 bytes (one record each) give pandas' own reading."""
    suffix = ".csv" if sep == "," else ".tsv"
    path = tmp_path / f"t{suffix}"
    path.write_bytes(b"\xef\xbb\xbf" + TRICKY.replace(",", sep).encode())
    want = pd.read_csv(path, sep=sep, keep_default_na=False, dtype=str, encoding="utf-8-sig")
    for rows, size in ((2, 1 << 20), (8192, 8)):
        monkeypatch.setattr(text_sources, "CHUNK_ROWS", rows)
        monkeypatch.setattr(csv_records, "CHUNK_BYTES", size)
        source = text_sources.open_source(path, "text", LineCap())
        got = [text for texts, _ in source.chunks() for text in texts]
        assert got == want["text"].tolist()


def test_csv_records_bounded_reads_name_the_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b'text\nok\n"' + b"z\n" * 600_000 + b'"\n')
    with pytest.raises(Exception, match=r"t\.csv line 3: a CSV record longer than"):
        list(csv_records.csv_records(path, ",", LineCap(max_chars=10)))
    assert json.dumps(csv_records.csv_record_bytes(LineCap(max_chars=10))) == "1048616"
