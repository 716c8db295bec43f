"""Strict JSON helpers shared by the versioned result types (no I/O beyond text).

Documents are written without NaN/Infinity (browsers and ``JSON.parse`` reject them; asv's
own files hold bare ``NaN``) and read back with explicit checks, so a truncated file, a
wrong type or an unknown schema version is a clear :mod:`neuronasv.errors` error that
names the field, never a ``KeyError`` deep inside the analysis.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from neuronasv.errors import CorruptResultsError, SchemaVersionError


def dumps(obj: Any) -> str:
    """Serialise deterministically (sorted keys, 2-space indent, no NaN)."""
    return json.dumps(obj, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def loads(text: str, *, source: str = "<string>") -> Any:
    """Parse JSON, turning syntax errors (truncation) into :class:`CorruptResultsError`."""

    def _no_constants(name: str) -> Any:
        raise CorruptResultsError(f"{source}: {name} is not allowed in a neuronasv document")

    try:
        return json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise CorruptResultsError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno});"
            " the file may be truncated"
        ) from exc


def check_schema(
    data: Any, *, kind: str, supported: Sequence[int], source: str
) -> Mapping[str, Any]:
    """Check that ``data`` is a ``kind`` document of a supported schema version."""
    if not isinstance(data, Mapping):
        raise CorruptResultsError(f"{source}: expected a JSON object, got {type(data).__name__}")
    got_kind = data.get("kind")
    if got_kind != kind:
        raise CorruptResultsError(f"{source}: expected a {kind!r} document, got kind={got_kind!r}")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptResultsError(f"{source}: schema_version missing or not an integer")
    if version not in supported:
        raise SchemaVersionError(
            f"{source}: {kind} schema version {version} is not supported"
            f" (this neuronasv reads {', '.join(map(str, supported))})",
            hint="upgrade neuronasv to read results written by a newer version",
        )
    return data


def field(data: Mapping[str, Any], name: str, typ: type | tuple[type, ...], source: str) -> Any:
    """Return ``data[name]`` checked against ``typ`` (bool is never accepted as a number)."""
    if name not in data:
        raise CorruptResultsError(f"{source}: field {name!r} is missing")
    value = data[name]
    types = typ if isinstance(typ, tuple) else (typ,)
    if isinstance(value, bool) and bool not in types:
        raise CorruptResultsError(f"{source}: field {name!r} must be {typ}, got a boolean")
    if not isinstance(value, types):
        raise CorruptResultsError(
            f"{source}: field {name!r} must be {typ}, got {type(value).__name__}"
        )
    return value


def finite_floats(
    values: Any, name: str, source: str, *, allow_empty: bool = False
) -> tuple[float, ...]:
    """A tuple of finite floats, or :class:`CorruptResultsError` naming the field."""
    if not isinstance(values, list):
        raise CorruptResultsError(f"{source}: {name} must be a list of numbers")
    out: list[float] = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise CorruptResultsError(f"{source}: {name}[{i}] is not a number: {v!r}")
        f = float(v)
        if not math.isfinite(f):
            raise CorruptResultsError(f"{source}: {name}[{i}] is not finite: {v!r}")
        out.append(f)
    if not out and not allow_empty:
        raise CorruptResultsError(f"{source}: {name} is empty")
    return tuple(out)


def optional_float(data: Mapping[str, Any], name: str, source: str) -> float | None:
    """``data[name]`` as a finite float, or None when absent/null."""
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CorruptResultsError(
            f"{source}: {name} must be a finite number or null, got {value!r}"
        )
    return float(value)


def strings(values: Any, name: str, source: str) -> tuple[str, ...]:
    """A tuple of strings, or :class:`CorruptResultsError` naming the field."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise CorruptResultsError(f"{source}: {name} must be a list of strings")
    return tuple(values)
