"""The calibration file: a CPU's roof stored with the machine's record, read as data.

``<results>/<machine>/calibration.peaks`` (:func:`neuronasv.store.layout.peaks_file`; JSON,
not ``.json``, so asv does not load it as results) holds a
:class:`~neuronasv.model.calibration.Calibration`. :func:`calibrate` measures one
(:mod:`neuronasv.measure.cpu_roof`, which refuses a dishonest measurement) and gives the
text to store; :func:`read_calibration` reads it back as untrusted data:

- a regular file only (checked before it is opened, and again on the open descriptor,
  which is opened non-blocking): a FIFO, a device (a link to ``/dev/zero``), a folder is a
  clear error, never a hang or a read without end;
- at most :data:`MAX_BYTES` bytes, strict UTF-8, strict JSON (no ``NaN``/``Infinity``),
  typed fields, a known schema version — and every rate within what a CPU can do
  (:data:`~neuronasv.measure.cpu_roof.PLAUSIBLE`);
- a version-1 file (measured with torch's default threads, stored whatever came out) is
  no roof: ``None``, as when there is no file;
- its name is shown with control characters escaped (:func:`shown`) wherever it is printed.
"""

from __future__ import annotations

import datetime
import os
import stat
from collections.abc import Callable, Mapping
from typing import Any

from neuronasv.errors import CorruptResultsError, SchemaVersionError
from neuronasv.format import plural
from neuronasv.measure.cpu_roof import Measuring, implausible, measure_cpu_roof
from neuronasv.measure.peaks import Peak
from neuronasv.model import _codec
from neuronasv.model.calibration import CALIBRATION_KIND, Calibration, RoofReading

__all__ = ["MAX_BYTES", "calibrate", "peak_of", "read_calibration", "shown"]

#: Largest calibration file read (a real one is about 1.5 KiB).
MAX_BYTES = 64 * 1024
_HINT = "re-measure it on a quiet machine: neuronasv doctor --calibrate"

#: ``(backend) -> (threads, readings)``: the measurement (injectable).
Measure = Callable[..., tuple[int, tuple[RoofReading, ...]]]


def shown(path: str) -> str:
    """``path`` for a terminal or a log: control and other unprintable characters escaped
    (``\\x1b``, ``\\n``), so a hostile file name cannot move the cursor or fake a line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(path))


def _kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(path: str, mode: int) -> CorruptResultsError:
    return CorruptResultsError(
        f"{shown(path)}: {_kind_of(mode)}, not a calibration (a regular file of at most"
        f" {MAX_BYTES // 1024} KiB)",
        hint=f"remove it, then {_HINT}",
    )


def _read_bounded(path: str) -> str | None:
    """The text of the regular file ``path`` (None when there is none)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CorruptResultsError(f"{shown(path)}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    if st.st_size > MAX_BYTES:
        raise CorruptResultsError(
            f"{shown(path)}: {st.st_size} bytes, larger than any calibration ({MAX_BYTES})",
            hint=f"remove it, then {_HINT}",
        )
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CorruptResultsError(f"{shown(path)}: cannot be read ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # swapped between the check and the open
            raise _not_regular(path, mode)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        raise CorruptResultsError(
            f"{shown(path)}: larger than any calibration ({MAX_BYTES} bytes)",
            hint=f"remove it, then {_HINT}",
        )
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptResultsError(f"{shown(path)}: not UTF-8 text", hint=_HINT) from None


def _outdated(data: Any) -> bool:
    """A version-1 calibration: measured with torch's default threads, never judged."""
    return (
        isinstance(data, Mapping)
        and data.get("kind") == CALIBRATION_KIND
        and "schema_version" not in data
        and data.get("version") == 1
    )


def peak_of(cal: Calibration, source: str = "<calibration>") -> Peak:
    """The roof a calibration stands for.

    Raises:
        CorruptResultsError: a rate no CPU has (a hand-edited or foreign file).
    """
    rates = {"bandwidth": cal.memory_bytes_per_s, **cal.flops_per_s}
    for what, rate in rates.items():
        why = implausible(what, rate, cal.threads)
        if why is not None:
            raise CorruptResultsError(f"{source}: {why}: not this CPU's roof", hint=_HINT)
    sizes = "; ".join(f"{r.what}: {r.size}" for r in cal.readings)
    return Peak(
        name=f"cpu ({plural(cal.threads, 'thread')})",
        memory_bytes_per_s=cal.memory_bytes_per_s,
        flops_per_s=dict(cal.flops_per_s),
        source=f"calibrated {cal.calibrated}" + (f" ({sizes})" if sizes else ""),
        measured=True,
        threads=cal.threads,
    )


def read_calibration(path: str) -> Peak | None:
    """The calibrated roof stored at ``path``; None when there is no file, or an outdated
    one (schema 1, see :mod:`neuronasv.model.calibration`).

    Raises:
        CorruptResultsError: not a regular file, too large, not UTF-8 JSON, wrong types,
            NaN, a rate no CPU has (exit 5); the message names the file, escaped.
        SchemaVersionError: a schema version this neuronasv does not read.
    """
    text = _read_bounded(path)
    if text is None:
        return None
    source = shown(path)
    try:
        data = _codec.loads(text, source=source)
        if _outdated(data):
            return None
        return peak_of(Calibration.from_json(data, source), source)
    except SchemaVersionError as exc:
        raise SchemaVersionError(
            exc.message, hint=f"written by a newer neuronasv: upgrade, or {_HINT}"
        ) from None
    except CorruptResultsError as exc:
        raise CorruptResultsError(exc.message, hint=exc.hint or _HINT) from None


def calibrate(
    backend: Measuring,
    *,
    measure: Measure = measure_cpu_roof,
    clock: Callable[[], str] | None = None,
) -> tuple[Peak, str]:
    """Measure this CPU's roof with ``backend``'s threads: ``(peak, file text)``.

    Raises:
        CalibrationRefused: measured under load, unsteady, or out of a CPU's bounds
            (:mod:`neuronasv.measure.cpu_roof`): nothing to store.
    """
    threads, readings = measure(backend)
    when = (clock or _now)()
    by_what = {r.what: r for r in readings}
    cal = Calibration(
        calibrated=when,
        threads=threads,
        memory_bytes_per_s=by_what["bandwidth"].rate,
        flops_per_s={w: r.rate for w, r in sorted(by_what.items()) if w != "bandwidth"},
        readings=readings,
    )
    text = cal.dumps()
    return peak_of(Calibration.loads(text)), text  # what a reader will make of it


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
