"""`lttw predict --file` on inputs that broke it, through the real command (a stand-in
model): a parquet file with a damaged page is the input's fault (exit 3, naming it, no
output), and CSV files whose records end in a lone CR read as pandas reads them, at the
chunk boundary too."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_runner import invoke

from lttw.inference import csv_records, text_sources


def test_a_damaged_parquet_page_names_the_input(fixed_model, tmp_path):
    texts = [f"text number {i} " * 20 for i in range(2000)]
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": texts}), path, compression="snappy", use_dictionary=False)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\xff" * 64  # inside the column's compressed page
    path.write_bytes(bytes(data))
    out = tmp_path / "out.csv"
    result = invoke("predict", "--file", path, "--out", out)
    assert result.exit_code == 3 and "Traceback" not in result.output, result.output
    line = result.stderr.strip().splitlines()[-1]  # after the progress bar's line
    assert line.startswith(f"error: {path}: not a readable parquet file"), line
    assert "cannot write" not in line and "out.csv" not in line
    assert not out.exists()


def test_lone_cr_line_ends_read_as_pandas_reads_them(fixed_model, tmp_path):
    """80,000 rows (1.5 MB) ended by CR alone: one record each, as pandas reads them (with
    --max-chars 10 a record may hold 1 MiB + 40 bytes)."""
    path = tmp_path / "cr.csv"
    rows = [f"{i},row {i} of a file" for i in range(80_000)]
    path.write_bytes(("id,text\r" + "\r".join(rows) + "\r").encode())
    want = pd.read_csv(path, keep_default_na=False, dtype=str)["text"].tolist()
    assert len(want) == 80_000
    out = tmp_path / "out.csv"
    result = invoke("predict", "--file", path, "--out", out, "--max-chars", "100")
    assert result.exit_code == 0, result.output
    assert pd.read_csv(out, keep_default_na=False, dtype=str)["text"].tolist() == want


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"])
@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_a_quoted_line_end_after_a_cr_at_the_chunk_boundary(
    fixed_model, tmp_path, monkeypatch, ending, chunk
):
    """``x\\r"a\\nb"``: the quote after a CR opens a quoted field, wherever the chunks of
    records (and the 1 MiB reads: ``_BLOCK`` made small) fall."""
    body = ending.join([b"text", b"1", b"2", b'x\r"a\nb"', b'"c\rd"', b"e"])
    path = tmp_path / "t.csv"
    path.write_bytes(body)
    want = pd.read_csv(path, keep_default_na=False, dtype=str)["text"].tolist()
    assert want == ["1", "2", "x", "a\nb", "c\rd", "e"]
    monkeypatch.setattr(text_sources, "CHUNK_ROWS", chunk)
    for block in (1, 2, 5, 1 << 20):
        monkeypatch.setattr(csv_records, "_BLOCK", block)
        source = text_sources.open_source(path, "text", None)
        assert [t for texts, _ in source.chunks() for t in texts] == want, block


def test_a_long_cr_record_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b'text\rok\r"' + b"z\r" * 600_000 + b'"\r')
    from lttw.inference.text_lines import LineCap

    with pytest.raises(Exception, match=r"t\.csv line 3: a CSV record longer than"):
        list(csv_records.csv_records(path, ",", LineCap(max_chars=10)))
