"""Serving throughput and latency of a model folder: ``lttw predict --file`` (torch, the batch
path) against ``lttw serve`` with torch, ONNX fp32 and ONNX int8, at 1, 8 and 64 concurrent
clients, each sending one text per request.

    python bench/prediction.py serve --model models/fold_0 --texts data/sample/test.parquet

Steps: (1) ``lttw export --onnx`` and ``--int8`` of ``--model`` into a temporary folder (each
checks itself against torch on ``--texts``; their one-line summaries are recorded); (2) the
batch path: ``lttw predict --file`` on the texts and on one text, three times each in turn,
texts/s = (n - 1) / the difference of the median times (start-up and model load cancel
out); (3) per backend, ``lttw serve --port 0`` on 127.0.0.1, a warm-up, then per client
count a load generator: ``clients`` asyncio workers sending ``{"text": ...}`` requests in
turn until ``--requests`` were sent or ``--max-seconds`` passed (then no new request
starts), every answer compared with the batch path's label; texts/s = answered texts / wall
time, p50 / p99 of the request latencies; ``--repeats`` load runs per client count, in
turn with the other counts, and the run of median texts/s reported (every run's texts/s
beside it: on a shared 2-core machine one run of the same setting swung from 87 to 123
texts/s); then SIGTERM.

The load generator (aiohttp: ``pip install -e ".[bench]"``) targets 127.0.0.1 only, is
bounded in requests and time, and shares the machine's CPUs with the server (as a client on
the same host would). Writes JSON (machine,
load average before and after, versions, settings, rows) to ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ROOT, describe  # (bench/ is on sys.path: the script's folder)

OUT = ROOT / "bench" / "results" / "serve_throughput.json"
HOST = "127.0.0.1"  # never any other address


def lttw(*args: str) -> list[str]:
    return [sys.executable, "-m", "lttw.cli", *args]


def run(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return elapsed, proc.stderr


def read_texts(path: Path, n: int) -> list[str]:
    import pandas as pd

    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return (
        frame["text"].astype(str).str.replace(r"\s+", " ", regex=True).str.strip().head(n).tolist()
    )


def batch_path(
    model: Path, texts: list[str], work: Path, repeats: int = 3
) -> tuple[dict, list[str]]:
    """``lttw predict --file`` (torch) on all texts and on one, ``repeats`` times each:
    texts/s without start-up, from the median times."""
    import pandas as pd

    (work / "all.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    (work / "one.txt").write_text(texts[0] + "\n", encoding="utf-8")
    ones, alls = [], []
    for _ in range(repeats):  # alternated; the medians (one run swung 69 to 105 texts/s)
        ones.append(
            run(
                lttw(
                    "predict",
                    "--model",
                    str(model),
                    "--file",
                    str(work / "one.txt"),
                    "--out",
                    str(work / "one.csv"),
                    "--force",
                )
            )[0]
        )
        alls.append(
            run(
                lttw(
                    "predict",
                    "--model",
                    str(model),
                    "--file",
                    str(work / "all.txt"),
                    "--out",
                    str(work / "all.csv"),
                    "--force",
                )
            )[0]
        )
    t_one, t_all = statistics.median(ones), statistics.median(alls)
    labels = pd.read_csv(work / "all.csv", keep_default_na=False)["label"].tolist()
    return {
        "backend": "lttw predict --file (torch)",
        "clients": None,
        "texts": len(texts),
        "wall_s": round(t_all, 3),
        "startup_s": round(t_one, 3),
        "runs_wall_s": [round(t, 3) for t in alls],
        "runs_startup_s": [round(t, 3) for t in ones],
        # None where the texts took no longer than one text (a model that costs nothing)
        "texts_per_s": round((len(texts) - 1) / (t_all - t_one), 1) if t_all > t_one else None,
        "texts_per_s_with_startup": round(len(texts) / t_all, 1),
    }, labels


class Server:
    """``lttw serve --port 0`` in a subprocess; its port read from uvicorn's start line."""

    def __init__(self, model: Path, extra: list[str]):
        self.proc = subprocess.Popen(
            lttw("serve", "--model", str(model), "--host", HOST, "--port", "0", *extra),
            stderr=subprocess.PIPE,
            text=True,
        )
        self.watchdog = threading.Timer(1800, self.proc.kill)  # never outlives the bench
        self.watchdog.start()
        self.log = []
        for line in self.proc.stderr:
            self.log.append(line)
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            if found:
                self.port = int(found[1])
                break
        else:
            raise SystemExit("lttw serve did not start:\n" + "".join(self.log[-20:]))

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        rest = self.proc.communicate(timeout=120)[1]
        self.watchdog.cancel()
        return rest


async def load(
    port: int,
    texts: list[str],
    expected: list[str],
    clients: int,
    requests: int,
    max_seconds: float,
) -> dict:
    """``clients`` workers, one ``{"text": ...}`` request each at a time, bounded. The client
    is aiohttp (its HTTP parser is C): httpx's pure-Python one was the bottleneck here, at 50
    requests/s with 64 clients against a model that costs nothing (aiohttp: 500)."""
    import aiohttp

    latencies, failures, wrong = [], [], 0
    issued = answered = 0
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(
        f"http://{HOST}:{port}", connector=connector, timeout=timeout
    ) as client:
        start = time.perf_counter()
        stop_at = start + max_seconds

        async def worker():
            nonlocal issued, answered, wrong
            while issued < requests and time.perf_counter() < stop_at:
                i = issued % len(texts)
                issued += 1
                t0 = time.perf_counter()
                try:
                    async with client.post("/predict", json={"text": texts[i]}) as response:
                        status = response.status
                        body = await response.json() if status == 200 else None
                except (aiohttp.ClientError, asyncio.TimeoutError) as err:
                    failures.append(type(err).__name__)
                    continue
                latencies.append(time.perf_counter() - t0)
                if status != 200:
                    failures.append(status)
                    continue
                answered += 1
                if body["predictions"][0]["label"] != expected[i]:
                    wrong += 1

        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - start
    ms = sorted(1000 * t for t in latencies)
    return {
        "clients": clients,
        "requests": issued,
        "answered": answered,
        "failed": len(failures),
        "labels_differing_from_batch_path": wrong,
        "wall_s": round(wall, 3),
        "texts_per_s": round(answered / wall, 1),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 1) if ms else None,
    }


def median_run(runs: list[dict]) -> dict:
    """The run of median texts/s (the lower middle one of an even count), with every run's
    texts/s and the failures and wrong labels summed over all runs."""
    ranked = sorted(runs, key=lambda row: row["texts_per_s"])
    return {
        **ranked[(len(ranked) - 1) // 2],
        "runs_texts_per_s": [row["texts_per_s"] for row in runs],
        "failed_all_runs": sum(row["failed"] for row in runs),
        "labels_differing_all_runs": sum(row["labels_differing_from_batch_path"] for row in runs),
    }


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="prediction.py serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="models/fold_0", help="a trained (torch) model folder")
    ap.add_argument(
        "--texts",
        default="data/sample/test.parquet",
        help="labelled held-out texts (.parquet/.csv, columns text, label)",
    )
    ap.add_argument("--n-texts", type=int, default=1000, help="texts used")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument(
        "--requests", type=int, default=1000, help="requests per load run (1 client: a quarter)"
    )
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        help="no new request starts after this many seconds of a load run",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="load runs per client count; the run of median texts/s is reported",
    )
    ap.add_argument("--backends", nargs="+", default=["torch", "onnx-fp32", "onnx-int8"])
    ap.add_argument("--serve-args", default="", help="extra `lttw serve` options")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)

    model, texts_path = Path(args.model), Path(args.texts)
    texts = read_texts(texts_path, args.n_texts)
    work = Path(tempfile.mkdtemp(prefix="lttw-serve-bench-"))
    result = {
        "machine": describe(
            packages=(
                "torch",
                "onnxruntime",
                "fastapi",
                "uvicorn",
                "aiohttp",
                "uvloop",
                "httptools",
            )
        ),
        "load_average_before": load_average(),
        "model": str(model),
        "texts": f"{texts_path} (first {len(texts)})",
        "settings": vars(args),
        "exports": {},
        "rows": [],
    }
    try:
        folders = {"torch": model}
        for name, flag in (("onnx-fp32", "--onnx"), ("onnx-int8", "--int8")):
            if name in args.backends:
                print(f"# exporting {name}", flush=True)
                _, log = run(
                    lttw(
                        "export",
                        "--model",
                        str(model),
                        "--out",
                        str(work / name),
                        flag,
                        "--check-file",
                        str(texts_path),
                        "--check-rows",
                        str(len(texts)),
                    )
                )
                result["exports"][name] = [line for line in log.splitlines() if "vs torch" in line]
                print("#", *result["exports"][name], flush=True)
                folders[name] = work / name
        print("# batch path: lttw predict --file", flush=True)
        row, expected = batch_path(model, texts, work)
        result["rows"].append(row)
        print(f"{row['backend']:32} {row['texts_per_s'] or float('nan'):8.1f} texts/s", flush=True)
        for name in args.backends:
            server = Server(folders[name], args.serve_args.split())
            try:
                asyncio.run(load(server.port, texts, expected, 8, 64, args.max_seconds))
                runs: dict[int, list[dict]] = {clients: [] for clients in args.clients}
                for _ in range(args.repeats):  # the client counts in turn, not one after one
                    for clients in args.clients:
                        n = args.requests // 4 if clients == 1 else args.requests
                        runs[clients].append(
                            asyncio.run(
                                load(server.port, texts, expected, clients, n, args.max_seconds)
                            )
                        )
                for clients in args.clients:
                    row = {"backend": f"lttw serve ({name})", **median_run(runs[clients])}
                    result["rows"].append(row)
                    print(
                        f"{row['backend']:32} {row['texts_per_s']:8.1f} texts/s  "
                        f"{clients:3d} clients  p50 {row['p50_ms']} ms  p99 {row['p99_ms']}"
                        f" ms  runs {row['runs_texts_per_s']}  failed "
                        f"{row['failed_all_runs']}  labels differing "
                        f"{row['labels_differing_all_runs']}",
                        flush=True,
                    )
            finally:
                tail = server.stop()
                result.setdefault("server_logs", {})[name] = [
                    line for line in tail.splitlines() if "stopped after" in line
                ]
        result["load_average_after"] = load_average()
        from lttw.io import write_json

        write_json(Path(args.out), result)
        print(
            f"# wrote {args.out} (load average before {result['load_average_before']}, "
            f"after {result['load_average_after']})"
        )
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
