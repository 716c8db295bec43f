"""Reading a findings document (and optional history values) for the report commands.

Errors name the file: a missing file is a :class:`~neuronasv.errors.UsageError`, a
truncated or malformed one a :class:`~neuronasv.errors.CorruptResultsError`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from neuronasv.errors import CorruptResultsError, UsageError
from neuronasv.format import format_bytes
from neuronasv.model.findings import FindingsDocument

__all__ = ["MAX_DOCUMENT_BYTES", "load_findings", "load_history_values", "read_text"]

#: Largest JSON document read (findings, profiles, history values): far above any real
#: one (a 1,000-series findings document is ~2 MB), low enough to refuse a planted
#: multi-GB file before it is read into memory.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


def read_text(path: str | Path, what: str, *, limit: int | None = None) -> str:
    """The UTF-8 text of ``path``; every failure an error naming the file.

    Raises:
        UsageError: missing, or a folder.
        CorruptResultsError: unreadable, larger than ``limit`` (default
            :data:`MAX_DOCUMENT_BYTES`), or not UTF-8.
    """
    p = Path(path)
    if limit is None:
        limit = MAX_DOCUMENT_BYTES
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise CorruptResultsError(
                    f"{p}: {what} is {format_bytes(size)}, larger than the"
                    f" {format_bytes(limit)} limit; not read"
                )
            raw = fh.read(limit + 1)
    except FileNotFoundError:
        raise UsageError(f"{what} {p} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {p} is a folder, not a file") from None
    except OSError as exc:
        raise CorruptResultsError(f"{p}: cannot read {what} ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise CorruptResultsError(f"{p}: {what} is larger than the {format_bytes(limit)} limit")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptResultsError(
            f"{p}: {what} is not UTF-8 text (byte {exc.start}: {exc.reason}); a binary file?"
        ) from None


def _read(path: str | Path, what: str) -> str:
    return read_text(path, what)


def load_findings(path: str | Path) -> FindingsDocument:
    """Load a findings document written by ``neuronasv compare``/``regressions``."""
    return FindingsDocument.loads(_read(path, "findings document"), source=str(path))


def load_history_values(path: str | Path) -> dict[str, list[float]]:
    """Load ``{series label: [values oldest → newest]}`` for the comment's chart."""
    from neuronasv.model import _codec

    data = _codec.loads(_read(path, "history values file"), source=str(path))
    if not isinstance(data, dict):
        raise CorruptResultsError(f"{path}: expected an object of label -> list of numbers")
    out: dict[str, list[float]] = {}
    for label, values in data.items():
        if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        ):
            raise CorruptResultsError(f"{path}: {label!r} must be a list of finite numbers")
        out[str(label)] = [float(v) for v in values]
    return out
