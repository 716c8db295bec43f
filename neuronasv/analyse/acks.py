"""Acknowledgements: expected shifts that maintainers accept (pure matching + file codec).

The file lives in the benchmarked repository, by default ``.neuronasv/acknowledgements.json``::

    {
      "kind": "neuronasv.acknowledgements",
      "schema_version": 2,
      "acknowledgements": [
        {"series": "workload=rmsnorm.naive op=aten::mul", "commit": "1a2b3c4d",
         "reason": "trade-off, see #12"},
        {"pattern": "rmsnorm.fused*", "commit": "*", "reason": "..."}
      ]
    }

Each entry names its series one way (:mod:`neuronasv.analyse.patterns`): ``series``, a
pattern in the field form, matched on the series' id; or ``pattern``, the earlier form, a
glob over the series' version-1 names (label in version 1's wording, benchmark,
``benchmark(params)``). ``commit`` is a hash prefix of the head commit (PR mode) or of the
first commit after a change point (history mode); ``"*"`` matches any commit. An
acknowledged finding is shown as such and never fails a check. JSON, not TOML, because the
package supports Python 3.10 (no ``tomllib``) and ``neuronasv ack`` writes it.

Schema history: 1 — first version (``pattern`` only, the earlier form); 2 — ``series``
(the field form) beside ``pattern``. A version-1 file reads as it always did (every entry
the earlier form); a file is written as version 1 while every entry is of the earlier form
(an older neuronasv still reads it) and as version 2 once one is not (an older neuronasv
refuses it, naming the version, rather than read a field form as a label glob).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from neuronasv.analyse.patterns import SeriesPattern
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
ACKS_SCHEMA_VERSION = 2
#: Versions :func:`loads_acks` reads (1: every entry the earlier form).
ACKS_SCHEMA_READS = (1, 2)
_KIND = "neuronasv.acknowledgements"


@dataclass(frozen=True)
class Acknowledgement:
    """One accepted shift: which series (a :class:`SeriesPattern`), from which commit, and
    why."""

    pattern: SeriesPattern
    commit: str
    reason: str

    def matches(self, series: SeriesId, commit: str) -> bool:
        if self.commit != "*" and not commit.lower().startswith(self.commit.lower()):
            return False
        return self.pattern.matches(series)

    def to_json(self) -> dict[str, Any]:
        key = "series" if self.pattern.structured else "pattern"
        return {key: self.pattern.text, "commit": self.commit, "reason": self.reason}


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
        supported=ACKS_SCHEMA_READS,
        source=source,
    )
    version = doc["schema_version"]
    raw = _codec.field(doc, "acknowledgements", list, source)
    out = []
    for i, a in enumerate(raw):
        where = f"{source} acknowledgements[{i}]"
        if not isinstance(a, dict):
            raise CorruptResultsError(f"{where}: must be an object")
        out.append(
            Acknowledgement(
                pattern=_pattern_of(a, version, where),
                commit=_codec.field(a, "commit", str, where),
                reason=_codec.field(a, "reason", str, where),
            )
        )
    return out


def _pattern_of(entry: dict[str, Any], version: int, where: str) -> SeriesPattern:
    """An entry's series: ``pattern`` (the earlier form) or, from version 2, ``series``
    (the field form); exactly one."""
    keys = [k for k in ("series", "pattern") if k in entry and (version > 1 or k == "pattern")]
    if len(keys) != 1:
        wanted = "'series' or 'pattern'" if version > 1 else "'pattern'"
        raise CorruptResultsError(f"{where}: needs exactly one of {wanted}")
    text = _codec.field(entry, keys[0], str, where)
    try:
        return SeriesPattern.parse(text, earlier=keys[0] == "pattern")
    except UsageError as exc:
        raise CorruptResultsError(f"{where}: {exc.message}") from None


def dumps_acks(acks: Sequence[Acknowledgement]) -> str:
    """The file: version 1 while every entry is of the earlier form, else version 2."""
    fields = any(a.pattern.structured for a in acks)
    return _codec.dumps(
        {
            "kind": _KIND,
            "schema_version": ACKS_SCHEMA_VERSION if fields else 1,
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
        if not a.pattern.text.strip() or not a.reason.strip():
            raise UsageError("an acknowledgement needs a pattern and a reason")
    if os.path.exists(p) and not os.path.isfile(p):
        raise UsageError(f"acknowledgements file {p} is not a regular file")
    write_atomic(p, dumps_acks(acks), make_dirs=True)
