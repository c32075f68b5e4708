"""A page as a person sees it: Debian's headless Chromium takes a screenshot of an HTML file
(no network, no GPU), and the picture is read back as an RGB array for the test to check."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    """The headless browser's command; the test is skipped where none is installed."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium installed (Debian: apt-get install chromium)")


def screenshot(page: Path, png: Path, width: int = 1200, height: int = 2400) -> np.ndarray:
    """``page`` rendered at ``width`` x ``height`` into ``png``; its (height, width, 3) uint8
    pixels."""
    import matplotlib.image

    subprocess.run(
        [
            browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={png.parent / '.chromium-profile'}",
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    pixels = matplotlib.image.imread(png)[..., :3]
    return (pixels * 255).round().astype(np.uint8) if pixels.dtype != np.uint8 else pixels


def share_near(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 12) -> float:
    """The share of pixels within ``tolerance`` of colour ``rgb`` on every channel."""
    close = np.abs(pixels.astype(np.int16) - np.array(rgb, np.int16)).max(axis=-1) <= tolerance
    return float(close.mean())
