"""Headless Chromium for the site tests: screenshot + console messages, no network.

Console messages come from Chromium's own log (``--enable-logging=stderr --v=0`` prints
every ``console.*`` call and uncaught exception as an ``INFO:CONSOLE`` line), which needs
no DevTools client. ``--virtual-time-budget`` lets the page's scripts finish before the
screenshot, without sleeping on the wall clock.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
)


def render(url: str, png: Path, *, width: int = 1300, height: int = 1000) -> list[str]:
    """Screenshot ``url`` into ``png``; return the console lines the page produced."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
            # no network: every non-file request fails (the site must not need one)
            "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
            "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
            "--run-all-compositor-stages-before-draw",
            "--virtual-time-budget=5000", f"--window-size={width},{height}",
            f"--screenshot={png}", url,
        ]  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)
    assert png.exists(), f"no screenshot (exit {p.returncode}): {p.stderr[-2000:]}"
    return [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
