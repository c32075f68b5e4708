"""Peak memory and time of reading a large input file, each in a fresh process.

    python bench/large_data.py init --mb 20       # `lttw init` on a generated 20 MB CSV
    python bench/large_data.py predict-csv --mb 32  # `lttw predict --file`'s CSV reading
    PYTHONPATH=/path/to/other/src python bench/large_data.py init --mb 20 --out before.json

``init``: a CSV of ``--mb`` MB (``text,label``: 10 to 50 words of a 5,000-word vocabulary,
four classes, about 176 bytes a row), then ``lttw init DIR --data FILE`` in a subprocess (git,
DVC, the data check): its peak resident memory (the largest of the command and the processes
it waited for) and wall time. ``predict-csv``: a CSV of ``--mb`` records of a 1 MB quoted text
field spanning 10,000 lines each, read as ``lttw predict --file F --truncate`` reads it
(``text_sources.open_source``), without a model: the growth of the process's peak memory
over its start-up. Writes ``bench/results/input_memory_<mode>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, describe  # (bench/ is on sys.path: the script's folder)

READ_CSV = """
import io, resource, sys
from pathlib import Path
import pandas as pd
from lttw.inference.text_sources import open_source
from lttw.inference.text_lines import LineCap
pd.read_csv(io.StringIO("a,b\\n1,2\\n"))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rows = sum(len(c) for c in open_source(Path(sys.argv[1]), "text", LineCap(truncate=True)).chunks())
print(rows, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
"""


def labelled_csv(path: Path, mb: float, seed: int = 0) -> int:
    """``text,label`` rows until the file holds ``mb`` MB; returns the number of rows."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    size, rows = 0, 0
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("text,label\n")
        while size < mb * 1e6:
            line = f"{' '.join(rng.choices(words, k=rng.randint(10, 50)))},c{rows % 4}\n"
            handle.write(line)
            size += len(line)
            rows += 1
    return rows


def spanning_csv(path: Path, records: int) -> None:
    line = b"y" * 99 + b"\n"
    with open(path, "wb") as handle:
        handle.write(b"id,text\nfirst,short text\n")
        for i in range(records):
            handle.write(b'%d,"' % i + line * 10_000 + b'"\n')


def init(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="large_data.py init")
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--out", default=str(RESULTS / "input_memory_init.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.csv"
        rows = labelled_csv(data, args.mb)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "lttw.cli", "init", str(Path(tmp) / "p"), "--data", str(data)],
            capture_output=True,
            text=True,
            env={**os.environ, "DVC_NO_ANALYTICS": "1"},
        )
        wall = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"lttw init failed ({done.returncode}): {done.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result = {
        "mode": "init",
        "file_mb": args.mb,
        "rows": rows,
        "peak_rss_mib": round(peak, 1),
        "wall_s": round(wall, 1),
        "lttw_src": _lttw_src(),
        "machine": describe(packages=("pandas", "pyarrow")),
    }
    print(f"lttw init, {args.mb:g} MB CSV ({rows:,} rows): peak {peak:.0f} MiB, {wall:.1f} s")
    return _write(result, args.out)


def predict_csv(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="large_data.py predict-csv")
    parser.add_argument("--mb", type=int, default=32, help="records of a 1 MB text")
    parser.add_argument("--out", default=str(RESULTS / "input_memory_predict_csv.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "big.csv"
        spanning_csv(data, args.mb)
        done = subprocess.run(
            [sys.executable, "-c", READ_CSV, str(data)], capture_output=True, text=True
        )
    if done.returncode:
        sys.exit(f"reading failed: {done.stderr[-2000:]}")
    rows, grown = done.stdout.split()
    result = {
        "mode": "predict-csv",
        "file_mb": args.mb,
        "rows": int(rows),
        "peak_growth_mib": round(float(grown), 1),
        "lttw_src": _lttw_src(),
        "machine": describe(packages=("pandas", "pyarrow")),
    }
    print(f"predict --file CSV, {args.mb} records of 1 MB: peak grew {float(grown):.0f} MiB")
    return _write(result, args.out)


def _lttw_src() -> str:
    import lttw

    return str(Path(lttw.__file__).parent)


def _write(result: dict, out: str) -> dict:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result
