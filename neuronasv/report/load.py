"""The one loader of the JSON documents commands take as input.

Findings documents (``compare``/``confirm``/``regressions`` output), profile documents
(``neuronasv profile --json``) and history values for the charts: every command reads
them through here (issue 15), so every one has the same size limit and the same errors,
naming the file: a missing file (or a folder) is a :class:`~neuronasv.errors.UsageError`
(exit 2), an unreadable, truncated, malformed or oversized one a
:class:`~neuronasv.errors.CorruptResultsError` (exit 5).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from neuronasv.errors import CorruptResultsError, UsageError
from neuronasv.format import format_bytes
from neuronasv.model.findings import FindingsDocument
from neuronasv.model.profile import ProfileDocument

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "load_findings",
    "load_history_values",
    "load_profile",
    "read_text",
]

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
    """Load a findings document written by ``neuronasv compare``/``regressions``.

    Every row carries its estimate and state (schema 4): nothing is derived here. An older
    version is refused with a :class:`~neuronasv.errors.SchemaVersionError` (exit 5) that
    says to run the command that wrote it again.
    """
    return FindingsDocument.loads(_read(path, "findings document"), source=str(path))


def load_profile(path: str | Path) -> ProfileDocument:
    """Load a profile document written by ``neuronasv profile --json``."""
    return ProfileDocument.loads(_read(path, "profile document"), source=str(path))


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
