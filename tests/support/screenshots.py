"""A page as a person sees it: Debian's headless Chromium takes a screenshot of an HTML file
or a served page (no GPU), or prints a served page's DOM after its scripts have run; the
picture is read back as an RGB array for the test to check."""

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


def _chromium(target: str, profile: Path, *options: str) -> str:
    """Headless Chromium on ``target`` (a URL) with ``options``; its standard output."""
    done = subprocess.run(
        [
            browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *options,
            target,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout


def _pixels(png: Path) -> np.ndarray:
    import matplotlib.image

    pixels = matplotlib.image.imread(png)[..., :3]
    return (pixels * 255).round().astype(np.uint8) if pixels.dtype != np.uint8 else pixels


def screenshot(
    page: Path | str, png: Path, width: int = 1200, height: int = 2400, wait_ms: int = 0
) -> np.ndarray:
    """``page`` (an HTML file, or a URL) rendered at ``width`` x ``height`` into ``png``,
    after ``wait_ms`` ms of the page's virtual time (its scripts and requests); its
    (height, width, 3) uint8 pixels."""
    target = page.resolve().as_uri() if isinstance(page, Path) else page
    waiting = [f"--virtual-time-budget={wait_ms}"] if wait_ms else []
    _chromium(
        target,
        png.parent / ".chromium-profile",
        f"--screenshot={png}",
        f"--window-size={width},{height}",
        *waiting,
    )
    return _pixels(png)


def page_dom(url: str, profile: Path, wait_ms: int = 10_000) -> str:
    """The DOM of the page at ``url`` once its scripts and their requests have run (up to
    ``wait_ms`` ms of the page's virtual time), as HTML."""
    return _chromium(url, profile, "--dump-dom", f"--virtual-time-budget={wait_ms}")


def share_near(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 12) -> float:
    """The share of pixels within ``tolerance`` of colour ``rgb`` on every channel."""
    close = np.abs(pixels.astype(np.int16) - np.array(rgb, np.int16)).max(axis=-1) <= tolerance
    return float(close.mean())
