"""Running ``neuron-explorer``: its version, and ``view`` of one device profile.

The tool ships in ``aws-neuronx-tools`` at ``/opt/aws/neuron/bin`` (Neuron docs, "Get
started with Neuron Explorer"); it is looked up on ``PATH``, then there. Every run goes
through :func:`neuronasv.proc.run_process` (timeouts, the process group killed), in a
temporary folder that is also the tool's ``HOME`` (a third-party wrapper notes the tool
"needs HOME writable"; nothing is written into the user's). What the tool prints or
writes is read by :mod:`neuronasv.measure.neuron_formats`; this module only runs it and
picks up its files.

Invocations (``neuron-explorer view``; how-to-profile-workload.rst, get-started.rst,
how-to-analyze-profile-output.rst, troubleshooting.rst):

* ``view -n X.neff -s Y.ntff --output-format summary-json`` — the summary on stdout;
* ``view ... --output-format parquet --output-file DIR`` — one ``<Table>.parquet`` per
  table in ``DIR`` (large tables split as ``<Table>_<k>.parquet``);
* ``view ... --output-format json --output-file FILE`` — the full JSON (2.33 is its last
  supported release, 2.34 no longer maintains it);
* ``view -d DIR ...`` in place of ``-n``/``-s`` for an NTFF that ran several NEFFs (a
  session profile), as the docs run it on a capture folder;
* ``--version``.

A run that fails (exit status, timeout, a file that is not what was asked for) is one
line in :attr:`ViewOutcome.problem`, with the tool's own last line (``NTFF version 7 is
not supported ...``): a finding, never an exception.

Parquet needs ``pyarrow`` (the ``neuron`` extra: ``pip install 'neuronasv[neuron]'``);
without it the device profile is read from the full JSON (:func:`profile_format`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neuronasv.measure.neuron_formats import (
    EVENT_COLUMNS,
    EVENT_TABLE,
    EXPLORER_JSON,
    PARQUET,
    PARQUET_MAGIC,
    TABLES,
    DeviceProfile,
    FormatMismatch,
    SummaryReading,
    parse_explorer_json,
    parse_parquet_tables,
    parse_summary_json,
    sniff_bytes,
)
from neuronasv.proc import TIMED_OUT, ProcResult, run_process

__all__ = [
    "INSTALL_DIRS",
    "TOOL",
    "Explorer",
    "Target",
    "ViewOutcome",
    "find_tool",
    "parquet_available",
    "profile_format",
    "read_parquet_dir",
]

TOOL = "neuron-explorer"
#: Where aws-neuronx-tools installs it when ``PATH`` lacks it (troubleshooting.rst).
INSTALL_DIRS: tuple[str, ...] = ("/opt/aws/neuron/bin",)
VIEW_TIMEOUT_S = 600.0
VERSION_TIMEOUT_S = 60.0

Runner = Callable[..., ProcResult]
_SPLIT_RE = re.compile(r"^(?P<table>[A-Za-z][A-Za-z0-9]*?)(?:_\d+)?\.parquet\Z")


def find_tool(*, path: str | None = None, install_dirs: Sequence[str] = INSTALL_DIRS) -> str | None:
    """The ``neuron-explorer`` executable: on ``path`` (default ``PATH``), then in the
    install folder; None when there is none."""
    found = shutil.which(TOOL, path=path)
    if found:
        return found
    for folder in install_dirs:
        candidate = os.path.join(folder, TOOL)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def parquet_available() -> bool:
    """pyarrow can be imported (the ``neuron`` extra)."""
    return importlib.util.find_spec("pyarrow") is not None


def profile_format() -> str:
    """The device-profile format to ask for: Parquet (the default and maintained one) when
    pyarrow is installed, else the full JSON (unmaintained after 2.34)."""
    return PARQUET if parquet_available() else EXPLORER_JSON


@dataclass(frozen=True)
class Target:
    """What one ``view`` processes: an NTFF with its NEFF, or a folder (``-d``)."""

    ntff: str | None = None
    neff: str | None = None
    folder: str | None = None

    def args(self) -> list[str]:
        if self.ntff and self.neff:
            return ["-n", self.neff, "-s", self.ntff]
        if self.folder:
            return ["-d", self.folder]
        raise ValueError("a view target needs an NTFF with its NEFF, or a folder")

    @property
    def name(self) -> str:
        """The profile's name: the NTFF's stem, else the folder's name."""
        path = self.ntff or self.folder or "?"
        base = os.path.basename(os.path.normpath(path))
        return base[: -len(".ntff")] if base.endswith(".ntff") else base


@dataclass(frozen=True)
class ViewOutcome:
    """A ``view`` run: what it gave, or the one line why not (``problem``)."""

    summaries: tuple[SummaryReading, ...] = ()
    profile: DeviceProfile | None = None
    problem: str | None = None


def _last_line(result: ProcResult) -> str:
    for stream in (result.stderr, result.stdout):
        text = stream if isinstance(stream, str) else stream.decode("utf-8", "replace")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines:
            return lines[-1][:300]
    return "(no output)"


def _json_text(text: str) -> Any:
    """The JSON document in ``text`` (a log line before it is skipped)."""
    try:
        return json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return json.loads(text[start : end + 1])
        raise


def read_parquet_dir(
    folder: str, *, importer: Callable[[str], Any] = importlib.import_module
) -> dict[str, list[dict[str, Any]]]:
    """The device-profile tables (:data:`TABLES`) under ``folder``, split files joined.

    Raises:
        ImportError: pyarrow is not installed.
        FormatMismatch: a ``.parquet`` file that is not Parquet.
    """
    pq = importer("pyarrow.parquet")
    files: dict[str, list[str]] = {}
    for dirpath, _dirs, names in os.walk(folder):
        for fname in sorted(names):
            m = _SPLIT_RE.match(fname)
            if m and m.group("table") in TABLES:
                files.setdefault(m.group("table"), []).append(os.path.join(dirpath, fname))
    tables: dict[str, list[dict[str, Any]]] = {}
    for table, paths in files.items():
        rows: list[dict[str, Any]] = []
        for path in paths:
            with open(path, "rb") as fh:
                head = fh.read(4)
            if head != PARQUET_MAGIC:
                with open(path, "rb") as fh:
                    raise FormatMismatch(PARQUET, sniff_bytes(fh.read(64)))
            columns = None
            if table == EVENT_TABLE:
                names_in = set(pq.read_schema(path).names)
                columns = [c for c in EVENT_COLUMNS if c in names_in]
            rows.extend(pq.read_table(path, columns=columns).to_pylist())
        tables[table] = rows
    return tables


class Explorer:
    """One ``neuron-explorer`` executable, run through :func:`run_process`.

    Args:
        tool: the executable (:func:`find_tool`).
        runner: runs a command (``run_process``'s signature; injected in tests).
        timeout: seconds one ``view`` may take.
    """

    def __init__(
        self, tool: str, *, runner: Runner = run_process, timeout: float = VIEW_TIMEOUT_S
    ) -> None:
        self.tool = tool
        self.runner = runner
        self.timeout = timeout

    def _run(self, args: Sequence[str], home: str, timeout: float) -> ProcResult:
        env: Mapping[str, str] = {**os.environ, "HOME": home}
        return self.runner([self.tool, *args], cwd=home, env=env, timeout=timeout, text=True)

    def _failed(self, what: str, result: ProcResult, timeout: float) -> str | None:
        if result.timed_out or result.returncode == TIMED_OUT:
            return f"{TOOL} {what} timed out after {timeout:.0f} s"
        if result.returncode != 0:
            return f"{TOOL} {what} exited {result.returncode}: {_last_line(result)}"
        return None

    def version(self) -> tuple[str | None, str | None]:
        """``(first line of --version, None)`` or ``(None, problem)``."""
        with tempfile.TemporaryDirectory(prefix="neuronasv-explorer-") as home:
            try:
                result = self._run(["--version"], home, VERSION_TIMEOUT_S)
            except OSError as exc:
                return None, f"{TOOL} --version could not start: {exc}"
        problem = self._failed("--version", result, VERSION_TIMEOUT_S)
        if problem:
            return None, problem
        text = str(result.stdout).strip() or str(result.stderr).strip()
        line = text.splitlines()[0].strip() if text else ""
        return (line, None) if line else (None, f"{TOOL} --version printed nothing")

    def summaries(self, target: Target) -> ViewOutcome:
        """``view ... --output-format summary-json``: one reading per device profile."""
        what = f"view {target.name} (summary-json)"
        with tempfile.TemporaryDirectory(prefix="neuronasv-explorer-") as home:
            try:
                result = self._run(
                    [*_view(target), "--output-format", "summary-json"], home, self.timeout
                )
            except OSError as exc:
                return ViewOutcome(problem=f"{TOOL} {what} could not start: {exc}")
        problem = self._failed(what, result, self.timeout)
        if problem:
            return ViewOutcome(problem=problem)
        try:
            data = _json_text(str(result.stdout))
        except ValueError:
            return ViewOutcome(problem=f"{TOOL} {what}: stdout is not JSON ({_last_line(result)})")
        try:
            return ViewOutcome(summaries=parse_summary_json(data, target.name))
        except FormatMismatch as exc:
            return ViewOutcome(problem=f"{TOOL} {what}: {exc}")

    def device_profile(self, target: Target, fmt: str) -> ViewOutcome:
        """``view ... --output-format parquet|json --output-file ...``: the tables."""
        flag = "parquet" if fmt == PARQUET else "json"
        what = f"view {target.name} ({flag})"
        with tempfile.TemporaryDirectory(prefix="neuronasv-explorer-") as home:
            out = os.path.join(home, "profile" if fmt == PARQUET else "profile.json")
            if fmt == PARQUET:
                os.mkdir(out)
            try:
                result = self._run(
                    [*_view(target), "--output-format", flag, "--output-file", out],
                    home,
                    self.timeout,
                )
            except OSError as exc:
                return ViewOutcome(problem=f"{TOOL} {what} could not start: {exc}")
            problem = self._failed(what, result, self.timeout)
            if problem:
                return ViewOutcome(problem=problem)
            try:
                profile = _read_profile(out, fmt, target.name)
            except FormatMismatch as exc:
                return ViewOutcome(problem=f"{TOOL} {what}: {exc}")
            except (OSError, ValueError, ImportError) as exc:
                return ViewOutcome(problem=f"{TOOL} {what}: {type(exc).__name__}: {exc}")
        return ViewOutcome(profile=profile)


def _view(target: Target) -> list[str]:
    return ["view", *target.args()]


def _read_profile(out: str, fmt: str, name: str) -> DeviceProfile:
    if fmt == PARQUET:
        tables = read_parquet_dir(out)
        return parse_parquet_tables(tables, name)
    path = out
    if not os.path.isfile(path):  # -d writes device_profile_model_<id>.json per model
        folder = os.path.dirname(out)
        found = sorted(
            f for f in os.listdir(folder) if f.startswith("device_profile") and f.endswith(".json")
        )
        if not found:
            raise FileNotFoundError(f"no {os.path.basename(out)} nor device_profile_*.json written")
        path = os.path.join(folder, found[0])
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw.lstrip()[:1] not in (b"{", b"["):
        raise FormatMismatch(EXPLORER_JSON, sniff_bytes(raw[:64]))
    return parse_explorer_json(json.loads(raw.decode("utf-8")), name)
