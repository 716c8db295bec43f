"""Strict JSON helpers shared by the versioned result types (no I/O beyond text).

Documents are written without NaN/Infinity (browsers and ``JSON.parse`` reject them; asv's
own files hold bare ``NaN``) and read back with explicit checks, so a truncated file, a
wrong type or an unknown schema version is a clear :mod:`neuronasv.errors` error that
names the field, never a ``KeyError`` deep inside the analysis.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from neuronasv.errors import CorruptResultsError, SchemaVersionError


def dumps(obj: Any) -> str:
    """Serialise deterministically (sorted keys, 2-space indent, no NaN)."""
    return json.dumps(obj, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


# Nesting deeper than this is no document of ours (findings nest 5 levels); refusing it
# up front keeps a planted ``[[[[...`` from exhausting the interpreter's stack.
MAX_DEPTH = 64
_OPEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]')
# A ``\ud800``-style escape of a lone surrogate: JSON allows it, UTF-8 cannot encode it.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", re.ASCII)


def _depth(text: str) -> int:
    depth = deepest = 0
    for m in _OPEN.finditer(text):
        c = m.group()[0]
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def check_text(value: str, where: str, source: str) -> str:
    """``value`` if it is encodable Unicode (no lone surrogates), else the error."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CorruptResultsError(
            f"{source}: {where} holds a lone surrogate ({value[exc.start]!a}): not valid Unicode"
        ) from None
    return value


def check_strings(obj: Any, source: str) -> None:
    """Refuse (:class:`CorruptResultsError`) any key or string that is not valid Unicode."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, "a string", source)
        elif isinstance(item, dict):
            for k, v in item.items():
                check_text(k, "a key", source)
                stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)


def loads(text: str, *, source: str = "<string>") -> Any:
    """Parse JSON, turning every failure into :class:`CorruptResultsError` naming ``source``.

    Refused: invalid or truncated JSON, ``NaN``/``Infinity``, nesting deeper than
    :data:`MAX_DEPTH`, and strings that are not valid Unicode (lone surrogates, which
    could never be written back as UTF-8).
    """

    def _no_constants(name: str) -> Any:
        raise CorruptResultsError(f"{source}: {name} is not allowed in a neuronasv document")

    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        raise CorruptResultsError(f"{source}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise CorruptResultsError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno});"
            " the file may be truncated"
        ) from exc
    except RecursionError:
        raise CorruptResultsError(f"{source}: JSON nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text) or not text.isascii():
        check_strings(data, source)
    return data


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


def opt_str(data: Mapping[str, Any], name: str, source: str) -> str | None:
    """``data[name]``: a string, or None when absent/null; anything else is corrupt."""
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise CorruptResultsError(
            f"{source}: field {name!r} must be a string or null, got {type(value).__name__}"
        )
    return value


def text_field(data: Mapping[str, Any], name: str, source: str, default: str = "") -> str:
    """``data[name]`` as a string (``default`` when absent); a non-string is corrupt."""
    value = data.get(name, default)
    if not isinstance(value, str):
        raise CorruptResultsError(
            f"{source}: field {name!r} must be a string, got {type(value).__name__}"
        )
    return value


def opt_bool(data: Mapping[str, Any], name: str, source: str) -> bool | None:
    """``data[name]``: true/false, or None when absent/null (``"false"`` is corrupt)."""
    value = data.get(name)
    if value is None or isinstance(value, bool):
        return value
    raise CorruptResultsError(
        f"{source}: field {name!r} must be true, false or null, got {value!r}"[:300]
    )


def bool_field(data: Mapping[str, Any], name: str, source: str, default: bool = False) -> bool:
    """``data[name]`` as a JSON boolean (``default`` when absent)."""
    value = opt_bool(data, name, source)
    return default if value is None else value


def int_field(data: Mapping[str, Any], name: str, source: str, default: int = 0) -> int:
    """``data[name]`` as an integer (``default`` when absent); ``3.5``, ``"3"`` are corrupt."""
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptResultsError(
            f"{source}: field {name!r} must be an integer, got {value!r}"[:300]
        )
    return value


def list_field(data: Mapping[str, Any], name: str, source: str) -> list[Any]:
    """``data[name]`` as a list (empty when absent or null)."""
    value = data.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise CorruptResultsError(
            f"{source}: field {name!r} must be a list, got {type(value).__name__}"
        )
    return value


def str_list(data: Mapping[str, Any], name: str, source: str) -> tuple[str, ...]:
    """``data[name]`` as a list of strings (empty when absent)."""
    values = list_field(data, name, source)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise CorruptResultsError(
                f"{source}: {name}[{i}] must be a string, got {type(v).__name__}"
            )
    return tuple(values)


def str_map(data: Mapping[str, Any], name: str, source: str) -> dict[str, str]:
    """``data[name]`` as an object of scalar values, as strings (empty when absent).

    Numbers are accepted and written as text (fingerprints hold versions); nested
    objects, lists and null are corrupt.
    """
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CorruptResultsError(
            f"{source}: field {name!r} must be an object, got {type(value).__name__}"
        )
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise CorruptResultsError(
                f"{source}: {name}[{k!r}] must be a string, got {type(v).__name__}"[:300]
            )
        out[str(k)] = v if isinstance(v, str) else str(v)
    return out


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
