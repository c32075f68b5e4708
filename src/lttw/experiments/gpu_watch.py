"""The card the direct runner's cells train on and how busy it is, from ``nvidia-smi`` (no
torch in the runner's process): its name, and its utilisation sampled every few seconds while
the runner runs. Without ``nvidia-smi`` (a CPU machine) both are None, never a guess."""

from __future__ import annotations

import shutil
import subprocess
import threading

SAMPLE_EVERY_S = 5.0
MAX_SAMPLES = 10_000  # a day and more at one sample per 5 s; later samples are dropped
QUERY_TIMEOUT_S = 10


def _query(fields: str) -> list[str] | None:
    """The first card's ``fields`` (nvidia-smi --query-gpu) as strings; None without
    nvidia-smi or where it fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=QUERY_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = proc.stdout.strip().splitlines() if proc.returncode == 0 else []
    return [part.strip() for part in lines[0].split(",")] if lines else None


def card_name() -> str | None:
    """The first card's name (e.g. ``NVIDIA H100 80GB HBM3``); None without one."""
    fields = _query("name")
    return fields[0] if fields else None


class Utilisation:
    """Samples the first card's utilisation (%) in a thread until ``stop``; ``summary`` is
    None where nothing was sampled (no nvidia-smi)."""

    def __init__(self, every_s: float = SAMPLE_EVERY_S):
        self.every_s = every_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Utilisation:
        if shutil.which("nvidia-smi") is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            fields = _query("utilization.gpu")
            if fields and len(self.samples) < MAX_SAMPLES:
                try:
                    self.samples.append(float(fields[0]))
                except ValueError:
                    pass
            self._stop.wait(self.every_s)

    def stop(self) -> dict | None:
        """Stop sampling; the mean and peak utilisation (%) and the number of samples."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=QUERY_TIMEOUT_S + 1)
        if not self.samples:
            return None
        return {
            "mean_pct": round(sum(self.samples) / len(self.samples), 1),
            "max_pct": max(self.samples),
            "samples": len(self.samples),
            "every_s": self.every_s,
        }
