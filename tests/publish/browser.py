"""One headless Chromium for the whole test run, driven over the DevTools protocol.

Chromium is started once (``--remote-debugging-pipe``: protocol messages over file
descriptors 3 and 4, NUL-terminated JSON; no port, no DevTools client library) and each
page gets a fresh target. Every wait is bounded and fails with a message naming what did
not happen (``BrowserTimeout``), so a wedged browser fails a test instead of hanging the
run. Console messages are the page's ``console.*`` calls, uncaught exceptions and log
entries (failed loads); ``render`` lets the page's scripts run for a fixed budget of
*virtual* time (``Emulation.setVirtualTimePolicy``, what ``--virtual-time-budget`` does)
before the screenshot, without sleeping on the wall clock.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
)


class BrowserTimeout(AssertionError):
    """A bounded wait ran out: the message says for what."""


class Browser:
    """A headless Chromium process and its protocol pipe."""

    def __init__(self, *, timeout: float = 30.0) -> None:
        assert CHROMIUM is not None
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="neuronasv-chromium-")
        cmd_r, self._cmd_w = os.pipe()  # we write commands, Chromium reads fd 3
        self._out_r, out_w = os.pipe()  # Chromium writes fd 4, we read
        args = [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--disable-extensions", f"--user-data-dir={self.profile}",
            # no network: every non-file request fails (the site must not need one)
            "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
            "--hide-scrollbars",
            "--remote-debugging-pipe", "about:blank",
        ]  # fmt: skip

        def fds() -> None:  # in the child: the pipe ends on the descriptors Chromium expects
            r, w = os.dup(cmd_r), os.dup(out_w)  # (either may already sit on 3 or 4)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,
            pass_fds=(3, 4),  # kept open past preexec_fn; everything else is closed
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.call("Browser.getVersion", what="Chromium to start")

    # -- protocol ---------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any], session: str | None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float, what: str) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserTimeout(f"headless Chromium: timed out waiting for {what}")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise BrowserTimeout(
                    f"headless Chromium exited (code {self.proc.poll()}) while waiting for {what}"
                )
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return json.loads(raw)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        what: str | None = None,
    ) -> dict[str, Any]:
        """Send a command and wait (bounded) for its answer; events meanwhile are kept."""
        mid = self._send(method, params or {}, session)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read(deadline, what or f"the answer to {method}")
            if msg.get("id") == mid:
                if "error" in msg:
                    raise AssertionError(f"{method} failed: {msg['error']}")
                return dict(msg.get("result", {}))
            self._events.append(msg)

    def wait_event(self, method: str, session: str, *, what: str) -> dict[str, Any]:
        """The first (kept or new) event ``method`` of ``session``, bounded."""
        deadline = time.monotonic() + self.timeout
        while True:
            for i, ev in enumerate(self._events):
                if ev.get("method") == method and ev.get("sessionId") == session:
                    return self._events.pop(i)
            self._events.append(self._read(deadline, what))

    def close(self) -> None:
        try:
            self._send("Browser.close", {}, None)
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            for fd in (self._cmd_w, self._out_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self.profile, ignore_errors=True)

    # -- pages ------------------------------------------------------------------------

    def render(
        self, url: str, png: Path, *, width: int = 1300, height: int = 1000, budget_ms: int = 5000
    ) -> list[str]:
        """Screenshot ``url`` into ``png``; return the console lines the page produced."""
        target = self.call("Target.createTarget", {"url": "about:blank", "background": False})[
            "targetId"
        ]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        try:
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable", session=session)
            # A hidden (background) page draws no frames, and a screenshot waits for one.
            self.call("Page.bringToFront", session=session)
            self.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            self.call("Emulation.setVirtualTimePolicy", {"policy": "pause"}, session=session)
            self.call("Page.navigate", {"url": url}, session=session)
            self.call(
                "Emulation.setVirtualTimePolicy",
                {"policy": "pauseIfNetworkFetchesPending", "budget": budget_ms},
                session=session,
            )
            self.wait_event(
                "Emulation.virtualTimeBudgetExpired",
                session,
                what=f"{url} to run its scripts for {budget_ms} ms of virtual time",
            )
            # Let time run again: a paused clock can hold back the frame a screenshot needs.
            self.call("Emulation.setVirtualTimePolicy", {"policy": "advance"}, session=session)
            shot = self.call(
                "Page.captureScreenshot", {"format": "png"}, session=session, what="a screenshot"
            )
            png.write_bytes(base64.b64decode(shot["data"]))
            return self._console(session)
        except BrowserTimeout as exc:
            raise BrowserTimeout(f"{exc} (rendering {url})") from None
        finally:
            with contextlib.suppress(BrowserTimeout):  # the render's own error says what failed
                self.call("Target.closeTarget", {"targetId": target})
            self._events = [e for e in self._events if e.get("sessionId") != session]

    def _console(self, session: str) -> list[str]:
        lines = []
        for ev in self._events:
            if ev.get("sessionId") != session:
                continue
            p = ev.get("params", {})
            if ev.get("method") == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                lines.append(f"console.{p.get('type')}: {text}")
            elif ev.get("method") == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                exc = d.get("exception", {}).get("description") or d.get("text", "")
                lines.append(f"uncaught: {exc}")
            elif ev.get("method") == "Log.entryAdded":
                e = p.get("entry", {})
                if e.get("level") in ("error", "warning"):
                    lines.append(f"log.{e.get('level')}: {e.get('text')} {e.get('url', '')}")
        return lines
