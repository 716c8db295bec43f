"""Acknowledgements: expected shifts that maintainers accept (pure matching + file codec).

The file lives in the benchmarked repository, by default ``.neuronasv/acknowledgements.json``::

    {
      "kind": "neuronasv.acknowledgements",
      "schema_version": 1,
      "acknowledgements": [
        {"pattern": "rmsnorm.naive*", "commit": "1a2b3c4d", "reason": "trade-off, see #12"}
      ]
    }

``pattern`` is an fnmatch pattern against the series label, benchmark name or
``benchmark(params)`` (as in rules); ``commit`` is a hash prefix of the head commit (PR
mode) or of the first commit after a change point (history mode); ``"*"`` matches any
commit. An acknowledged finding is shown as such and never fails a check. JSON, not TOML,
because the package supports Python 3.10 (no ``tomllib``) and ``neuronasv ack`` writes it.

Schema history: 1 — first version.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from neuronasv.analyse.rules import series_names
from neuronasv.errors import CorruptResultsError, UsageError
from neuronasv.fileio import write_atomic
from neuronasv.model import SeriesId, _codec

__all__ = [
    "ACKS_PATH",
    "Acknowledgement",
    "dumps_acks",
    "load_acks",
    "loads_acks",
    "match_ack",
    "save_acks",
]

ACKS_PATH = os.path.join(".neuronasv", "acknowledgements.json")
ACKS_SCHEMA_VERSION = 1
_KIND = "neuronasv.acknowledgements"


@dataclass(frozen=True)
class Acknowledgement:
    """One accepted shift: which series, from which commit, and why."""

    pattern: str
    commit: str
    reason: str

    def matches(self, series: SeriesId, commit: str) -> bool:
        if self.commit != "*" and not commit.lower().startswith(self.commit.lower()):
            return False
        return any(fnmatch.fnmatchcase(n, self.pattern) for n in series_names(series))

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "commit": self.commit, "reason": self.reason}


def match_ack(
    acks: Iterable[Acknowledgement], series: SeriesId, commit: str
) -> Acknowledgement | None:
    """The first acknowledgement matching ``series`` at ``commit``, if any."""
    return next((a for a in acks if a.matches(series, commit)), None)


def loads_acks(text: str, source: str = "<acknowledgements>") -> list[Acknowledgement]:
    """Parse an acknowledgements document (errors name the file and entry)."""
    doc = _codec.check_schema(
        _codec.loads(text, source=source),
        kind=_KIND,
        supported=(ACKS_SCHEMA_VERSION,),
        source=source,
    )
    raw = _codec.field(doc, "acknowledgements", list, source)
    out = []
    for i, a in enumerate(raw):
        where = f"{source} acknowledgements[{i}]"
        if not isinstance(a, dict):
            raise CorruptResultsError(f"{where}: must be an object")
        out.append(
            Acknowledgement(
                pattern=_codec.field(a, "pattern", str, where),
                commit=_codec.field(a, "commit", str, where),
                reason=_codec.field(a, "reason", str, where),
            )
        )
    return out


def dumps_acks(acks: Sequence[Acknowledgement]) -> str:
    return _codec.dumps(
        {
            "kind": _KIND,
            "schema_version": ACKS_SCHEMA_VERSION,
            "acknowledgements": [a.to_json() for a in acks],
        }
    )


def load_acks(path: str | os.PathLike[str]) -> list[Acknowledgement]:
    """Read the file; a missing file means no acknowledgements."""
    p = os.fspath(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return []
    except IsADirectoryError:
        raise UsageError(f"acknowledgements file {p} is a folder, not a file") from None
    except OSError as exc:
        raise CorruptResultsError(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptResultsError(f"{p}: not UTF-8 text ({exc.reason})") from None
    return loads_acks(text, p)


def save_acks(path: str | os.PathLike[str], acks: Sequence[Acknowledgement]) -> None:
    """Write the file atomically (rename), creating its folder."""
    p = os.fspath(path)
    for a in acks:
        if not a.pattern or not a.reason.strip():
            raise UsageError("an acknowledgement needs a pattern and a reason")
    if os.path.exists(p) and not os.path.isfile(p):
        raise UsageError(f"acknowledgements file {p} is not a regular file")
    write_atomic(p, dumps_acks(acks), make_dirs=True)
