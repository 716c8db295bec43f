"""Strict JSON helpers shared by the versioned result types (no I/O beyond text).

Documents are written without NaN/Infinity (browsers and ``JSON.parse`` reject them; asv's
own files hold bare ``NaN``) and read back with explicit checks, so a truncated file, a
wrong type or an unknown schema version is a clear :mod:`neuronasv.errors` error that
names the field, never a ``KeyError`` deep inside the analysis.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec

from neuronasv.errors import CorruptResultsError, SchemaVersionError


def dumps(obj: Any) -> str:
    """Serialise deterministically (sorted keys, 2-space indent, no NaN).

    The bytes of ``json.dumps(obj, indent=2, sort_keys=True, ...)``, made by the stdlib's
    C encoder (compact) and re-indented by msgspec: ``indent=2`` alone runs the pure-Python
    encoder, 2.5x slower on a 10,000-series findings document.
    """
    compact = json.dumps(obj, sort_keys=True, allow_nan=False, ensure_ascii=False)
    return msgspec.json.format(compact.encode("utf-8"), indent=2).decode("utf-8") + "\n"


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


# --- Values in range -----------------------------------------------------------------------
#
# Every number a document or results file holds is refused at decoding when no measurement
# could produce it, so the arithmetic never meets it (1e308 would make a ratio NaN, a
# 401-digit integer a traceback in ``float()``):
#
# - an integer literal of more than :data:`MAX_INT_DIGITS` digits is refused by the JSON
#   decoder itself (before Python converts it; :func:`parse_json`);
# - a number whose magnitude exceeds :data:`MAX_MAGNITUDE` is refused wherever a float is
#   read (:func:`finite_floats`, :func:`optional_float`, float fields) and an integer
#   beyond :data:`MAX_INT` wherever an integer is read;
# - fields that hold measurements say what they must be with ``spec(bound=...)``:
#   ``"positive"`` (samples, times of a whole run) or ``"nonneg"`` (counts, bytes, FLOPs,
#   per-op times).

#: Longest integer literal the decoders accept (10^18 - 1: any count, byte total, date).
MAX_INT_DIGITS = 18
#: Largest magnitude of a float in any document (bytes or FLOPs of one run are < 10^18).
MAX_MAGNITUDE = 1e18
#: Largest integer in any document (exactly representable as a float).
MAX_INT = 2**53
#: The per-field bounds ``spec(bound=...)`` accepts, and how errors word them.
BOUNDS = {"positive": "> 0", "nonneg": ">= 0"}


def in_range(value: float, bound: str | None = None) -> bool:
    """Whether ``value`` is finite, within :data:`MAX_MAGNITUDE` and within ``bound``."""
    if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:  # False for NaN too
        return False
    if bound == "positive":
        return value > 0.0
    return bound != "nonneg" or value >= 0.0


def _range_words(bound: str | None) -> str:
    extra = f" and {BOUNDS[bound]}" if bound else ""
    return f"finite, at most {MAX_MAGNITUDE:.0e} in magnitude{extra}"


def _decode_int(source: str) -> Callable[[str], int]:
    def parse_int(literal: str) -> int:
        digits = len(literal) - literal.startswith("-")
        if digits > MAX_INT_DIGITS:
            raise CorruptResultsError(
                f"{source}: an integer of {digits} digits is out of range"
                f" (at most {MAX_INT_DIGITS} digits)"
            )
        return int(literal)

    return parse_int


def _decode_float(source: str) -> Callable[[str], float]:
    def parse_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise CorruptResultsError(f"{source}: the number {literal[:40]} is out of range")
        return value

    return parse_float


def parse_json(
    text: str, source: str, *, parse_constant: Callable[[str], Any] | None = None
) -> Any:
    """``json.loads`` with every failure as :class:`CorruptResultsError` naming ``source``
    (the one wording for neuronasv's documents and asv's results files alike). Integer
    literals longer than :data:`MAX_INT_DIGITS` digits and float literals beyond the
    float range are refused by the decoder, before any conversion."""
    try:
        return json.loads(
            text,
            parse_constant=parse_constant,
            parse_int=_decode_int(source),
            parse_float=_decode_float(source),
        )
    except json.JSONDecodeError as exc:
        raise CorruptResultsError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno});"
            " the file may be truncated"
        ) from exc
    except RecursionError:
        raise CorruptResultsError(f"{source}: JSON nested too deeply") from None


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
    data = parse_json(text, source, parse_constant=_no_constants)
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
    if value.__class__ is int and not -MAX_INT <= value <= MAX_INT:
        raise CorruptResultsError(f"{source}: field {name!r} is out of range ({MAX_INT:.0e})")
    return value


def finite_floats(
    values: Any, name: str, source: str, *, allow_empty: bool = False, bound: str | None = None
) -> tuple[float, ...]:
    """A tuple of floats in range (:func:`in_range`), or :class:`CorruptResultsError`
    naming the field."""
    if not isinstance(values, list):
        raise CorruptResultsError(f"{source}: {name} must be a list of numbers")
    out: list[float] = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise CorruptResultsError(f"{source}: {name}[{i}] is not a number: {v!r}"[:300])
        if not in_range(v, bound):
            finite = v == v and abs(v) != math.inf
            what = f"must be {_range_words(bound)}, got" if finite else "is not finite:"
            raise CorruptResultsError(f"{source}: {name}[{i}] {what} {v!r}"[:300])
        out.append(float(v))
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
    if isinstance(value, bool) or not isinstance(value, int) or not -MAX_INT <= value <= MAX_INT:
        raise CorruptResultsError(
            f"{source}: field {name!r} must be an integer of at most {MAX_INT}"
            f" in magnitude, got {value!r}"[:300]
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


def optional_float(
    data: Mapping[str, Any], name: str, source: str, bound: str | None = None
) -> float | None:
    """``data[name]`` as a float in range (:func:`in_range`), or None when absent/null."""
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not in_range(value, bound):
        raise CorruptResultsError(
            f"{source}: {name} must be a finite number or null ({_range_words(bound)}),"
            f" got {value!r}"[:300]
        )
    return float(value)


def strings(values: Any, name: str, source: str) -> tuple[str, ...]:
    """A tuple of strings, or :class:`CorruptResultsError` naming the field."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise CorruptResultsError(f"{source}: {name} must be a list of strings")
    return tuple(values)


# --- Declarative codecs ------------------------------------------------------------------
#
# Every versioned type is a frozen dataclass that inherits :class:`Model` (a nested
# object) or :class:`Document` (a top-level file with ``kind`` and ``schema_version``).
# ``to_json``/``from_json`` are derived once per class from its fields' annotations, so a
# new field is one line in the class: its type says how it is written and checked. JSON
# keys are the field names; ``dumps`` sorts them, so field order never changes the bytes.
# Additive fields need a default (older files lack them); a field older readers must not
# see written when empty takes ``spec(omit_empty=True)``.
#
# | annotation                | written as        | read with (errors name the field)       |
# | ------------------------- | ----------------- | --------------------------------------- |
# | ``str`` / ``int`` / ``float`` / ``bool`` | itself | :func:`field` when required, else |
# |                           |                   | :func:`text_field`/:func:`int_field`/   |
# |                           |                   | :func:`bool_field` with the default     |
# | ``Literal[...]``          | the string        | :func:`field`, then "unknown <label>"   |
# | ``X | None`` (scalar)     | value or null     | :func:`opt_str`/:func:`optional_float`/ |
# |                           |                   | :func:`opt_bool`                        |
# | ``tuple[str, ...]``       | list              | :func:`str_list`                        |
# | ``tuple[float, ...]``     | list              | :func:`finite_floats` (non-empty)       |
# | ``Model`` / ``Model | None`` | object / null  | ``Model.from_json``                     |
# | ``tuple[Model, ...]``     | list of objects   | each ``Model.from_json``; the list must |
# |                           |                   | be present unless the field has a default|
# | ``Mapping[str, str]``     | object            | :func:`str_map`                         |
# | ``Mapping[str, Any]``     | object, verbatim  | must be an object                       |
#
# Anything else (a pair list, a renamed key, a derived value) is spelled out with
# :func:`spec` in the field's metadata.

_T = TypeVar("_T", bound="Model")
_D = TypeVar("_D", bound="Document")
_Encode = Callable[[Any], Any]  # the instance -> the JSON value
_Decode = Callable[[Mapping[str, Any], str], Any]  # (object, source) -> the field's value


def spec(
    *,
    key: str | None = None,
    label: str | None = None,
    choices: tuple[str, ...] | None = None,
    omit_empty: bool = False,
    skip: bool = False,
    encode: _Encode | None = None,
    decode: _Decode | None = None,
    bound: str | None = None,
) -> dict[str, Any]:
    """Metadata for ``dataclasses.field(metadata=spec(...))`` where the annotation is not enough.

    Args:
        key: the JSON key when it is not the field's name.
        label: how errors name the field's value (``unknown <label> 'x'``).
        choices: the strings a ``str`` field accepts (``Literal`` annotations need none).
        omit_empty: leave the key out when the value is empty (an additive field that
            older readers never saw).
        skip: not part of the JSON (derived or in-process only).
        encode: the JSON value from the *instance*, replacing the derived writer.
        decode: ``(object, source) -> value``, replacing the derived reader.
        bound: ``"positive"`` or ``"nonneg"``: what a float field (or each item of a
            float list) must also be (see "Values in range").
    """
    if bound is not None and bound not in BOUNDS:
        raise ValueError(f"unknown bound {bound!r}")
    return {
        "codec": {
            "key": key,
            "label": label,
            "choices": choices,
            "omit_empty": omit_empty,
            "skip": skip,
            "encode": encode,
            "decode": decode,
            "bound": bound,
        }
    }


def _finite(value: int | float, name: str, source: str, bound: str | None = None) -> float:
    if not in_range(value, bound):
        raise CorruptResultsError(
            f"{source}: field {name!r} must be {_range_words(bound)}, got {value!r}"[:300]
        )
    return float(value)


def _model_of(tp: Any) -> type[Model] | None:
    return tp if isinstance(tp, type) and issubclass(tp, Model) else None


def _plain(tp: Any) -> Any:
    """``X | None`` -> (X, True); anything else -> (tp, False)."""
    args = get_args(tp)
    if get_origin(tp) in (Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0], True
    return tp, False


@dataclasses.dataclass(frozen=True)
class _Read:
    """What every reader expression of one field is made of.

    Attributes:
        name: the field's name (the suffix of its objects in the namespace).
        key: the JSON key, as Python source (``'op'``).
        required: no default and no default factory.
        bound: the float bound, as Python source (``'positive'`` or ``None``).
    """

    name: str
    key: str
    required: bool
    bound: str


def _choice_reader(
    r: _Read, choices: tuple[str, ...], label: str, ns: dict[str, Any]
) -> str:
    """A string out of ``choices`` (an additive choice, not required, has its default)."""
    ns[f"C_{r.name}"] = (frozenset(choices), label)
    if not r.required:  # an additive choice: older files lack it
        return f"_choice(data, {r.key}, C_{r.name}, source, D_{r.name})"
    return f"_choice(data, {r.key}, C_{r.name}, source)"


def _model_reader(r: _Read, model: type[Model], optional: bool, ns: dict[str, Any]) -> str:
    """A nested object (null allowed when the annotation is optional)."""
    ns[f"M_{r.name}"] = model
    if optional:
        return f"_opt_model(M_{r.name}, data.get({r.key}), source)"
    return f"M_{r.name}.from_json(data.get({r.key}), source)"


def _optional_reader(r: _Read, inner: Any) -> str | None:
    """``float | None``, ``str | None``, ``bool | None``; None for any other type."""
    if inner is float:
        return f"optional_float(data, {r.key}, source, {r.bound})"
    scalar = {str: "opt_str", bool: "opt_bool"}.get(inner)
    if scalar is not None:
        return f"{scalar}(data, {r.key}, source)"
    return None


def _list_reader(r: _Read, item: Any, ns: dict[str, Any]) -> str | None:
    """``tuple[str, ...]``, ``tuple[float, ...]`` or ``tuple[Model, ...]``; else None."""
    item_model = _model_of(item)
    if item is str:
        return f"str_list(data, {r.key}, source)"
    if item is float:
        return f"finite_floats(data.get({r.key}), {r.key}, source, bound={r.bound})"
    if item_model is None:
        return None
    ns[f"M_{r.name}"] = item_model
    # a required list must be present (even if empty); an optional one may be null
    get = (
        f"field(data, {r.key}, list, source)"
        if r.required
        else f"list_field(data, {r.key}, source)"
    )
    return f"tuple([M_{r.name}.from_json(x, source) for x in {get}])"


def _plain_reader(r: _Read, inner: Any, ns: dict[str, Any]) -> str | None:
    """A field that is not optional: a scalar, a required float, a list or a mapping;
    None when no derived reader fits (a float with a default among them)."""
    origin, args = get_origin(inner), get_args(inner)
    if inner in (str, int, bool):
        if r.required:
            return f"field(data, {r.key}, {inner.__name__}, source)"
        reader = {str: "text_field", int: "int_field", bool: "bool_field"}[inner]
        return f"{reader}(data, {r.key}, source, D_{r.name})"
    if inner is float:
        if not r.required:
            return None
        number = f"field(data, {r.key}, (int, float), source)"
        return f"_finite({number}, {r.key}, source, {r.bound})"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _list_reader(r, args[0], ns)
    if origin in (Mapping, dict):
        if args == (str, str):
            return f"str_map(data, {r.key}, source)"
        if args and args[0] is str:
            return f"_object(data, {r.key}, source)"
    return None


def _reader(
    f: dataclasses.Field[Any], tp: Any, opts: Mapping[str, Any], owner: str, ns: dict[str, Any]
) -> str:
    """The expression that reads field ``f`` from ``data`` (errors name ``source``).

    Objects the expression needs (a nested type, a default, the accepted strings) are
    put in ``ns`` under names suffixed with the field's name.
    """
    default: Any = f.default
    required = default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ns[f"D_{f.name}"] = default
    if opts["decode"] is not None:
        ns[f"X_{f.name}"] = opts["decode"]
        return f"X_{f.name}(data, source)"
    r = _Read(f.name, repr(opts["key"] or f.name), required, repr(opts.get("bound")))
    inner, optional = _plain(tp)
    origin, args = get_origin(inner), get_args(inner)
    choices: tuple[str, ...] | None = tuple(args) if origin is Literal else opts["choices"]
    if choices is not None:
        return _choice_reader(r, choices, opts["label"] or f.name, ns)
    model = _model_of(inner)
    if model is not None:
        return _model_reader(r, model, optional, ns)
    expr = _optional_reader(r, inner) if optional else _plain_reader(r, inner, ns)
    if expr is None:
        raise TypeError(f"{owner}.{f.name}: no codec for {tp!r}; give it spec(encode=, decode=)")
    return expr


def _writer(f: dataclasses.Field[Any], tp: Any, opts: Mapping[str, Any], ns: dict[str, Any]) -> str:
    """The expression that writes field ``f`` of ``self``."""
    if opts["encode"] is not None:
        ns[f"E_{f.name}"] = opts["encode"]
        return f"E_{f.name}(self)"
    value = f"self.{f.name}"
    inner, optional = _plain(tp)
    origin, args = get_origin(inner), get_args(inner)
    if _model_of(inner) is not None:
        return (
            f"(None if {value} is None else {value}.to_json())"
            if optional
            else f"{value}.to_json()"
        )
    if origin is tuple:
        if args and _model_of(args[0]) is not None:
            return f"[x.to_json() for x in {value}]"
        return f"list({value})"
    if origin in (Mapping, dict):
        return f"dict({value})"
    return value


def _choice(
    data: Mapping[str, Any],
    name: str,
    allowed: tuple[frozenset[str], str],
    source: str,
    default: str | None = None,
) -> str:
    if default is not None and name not in data:
        return default
    value: str = field(data, name, str, source)
    if value not in allowed[0]:
        raise CorruptResultsError(f"{source}: unknown {allowed[1]} {value!r}")
    return value


def _opt_model(model: type[Model], value: Any, source: str) -> Any:
    return None if value is None else model.from_json(value, source)


def _object(data: Mapping[str, Any], name: str, source: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, Mapping):
        raise CorruptResultsError(f"{source}: field {name!r} must be an object")
    return dict(value)


class _Plan:
    """One class's ``encode(self)`` and ``decode(cls, data, source)``, generated once.

    Generated as source text (as :mod:`dataclasses` writes ``__init__``) so reading a
    field costs one call of its checker, as the hand-written codecs did: a history load
    reads tens of thousands of op entries.
    """

    __slots__ = ("decode", "encode", "keys")

    def __init__(self, cls: type[Model]) -> None:
        hints = get_type_hints(cls)
        ns: dict[str, Any] = {
            **{k: v for k, v in globals().items() if not k.startswith("__")},
            "CLS": cls,
            "WHAT": cls._what,
        }
        written, read, omit = [], [], []
        keys: list[str] = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            opts = f.metadata.get("codec") or spec()["codec"]
            if opts["skip"]:
                continue
            key = opts["key"] or f.name
            keys.append(key)
            written.append(f"{key!r}: {_writer(f, hints[f.name], opts, ns)}")
            read.append((f.name, _reader(f, hints[f.name], opts, cls.__name__, ns)))
            if opts["omit_empty"]:
                omit.append(key)
        enc = [f"    out = {{{', '.join(written)}}}"]
        enc += [f"    if not out[{k!r}]:\n        del out[{k!r}]" for k in omit]
        enc += ["    return out"]
        dec = [
            "    if not isinstance(data, Mapping):",
            "        raise CorruptResultsError(f'{source}: {WHAT} must be an object')",
        ]
        if cls._context is not None:
            # ("op", "op"): errors inside name the object, "... op 'aten::mul': ..."
            label, attr = cls._context
            expr = dict(read)[attr]
            read = [(n, n if n == attr else e) for n, e in read]
            dec += [f"    {attr} = {expr}", f"    source = f'{{source}} {label} {{{attr}!r}}'"]
        if "_check" in {k for c in cls.__mro__[:-1] if c is not Model for k in vars(c)}:
            dec += ["    values = {" + ", ".join(f"{n!r}: {e}" for n, e in read) + "}"]
            dec += ["    CLS._check(values, data, source)", "    return CLS(**values)"]
        else:
            dec += ["    return CLS(" + ", ".join(f"{n}={e}" for n, e in read) + ")"]
        text = "def encode(self):\n" + "\n".join(enc) + "\n\n"
        text += "def decode(data, source):\n" + "\n".join(dec) + "\n"
        exec(compile(text, f"<codec of {cls.__qualname__}>", "exec"), ns)
        self.encode: Callable[[Any], dict[str, Any]] = ns["encode"]
        self.decode: Callable[[Any, str], Any] = ns["decode"]
        self.keys = tuple(keys)


class Model:
    """A nested JSON object whose codec is derived from its dataclass fields.

    Subclasses are frozen dataclasses and set ``_what`` (how errors name the object:
    ``"op entry"`` -> ``op entry must be an object``) and optionally ``_context``
    (``(label, field)``: errors inside name the object by that field's value).
    """

    _what: ClassVar[str] = "entry"
    _context: ClassVar[tuple[str, str] | None] = None
    _codec_plan_: ClassVar[_Plan | None] = None

    @classmethod
    def _codec_plan(cls) -> _Plan:
        # Built on first use (the annotations name classes defined later in the module)
        # and kept on the class itself: derived from the type, never from data.
        plan: _Plan | None = cls.__dict__.get("_codec_plan_")
        if plan is None:
            plan = _Plan(cls)
            cls._codec_plan_ = plan
        return plan

    def to_json(self) -> dict[str, Any]:
        return self._codec_plan().encode(self)

    @classmethod
    def from_json(cls: type[_T], data: Any, source: str = "<json>") -> _T:
        return cls._codec_plan().decode(data, source)

    @classmethod
    def _check(cls, values: dict[str, Any], data: Mapping[str, Any], source: str) -> None:
        """Cross-field checks and reading of older versions (may adjust ``values``)."""


class Document(Model):
    """A top-level file: ``kind`` and ``schema_version`` around the derived fields.

    Subclasses set ``_kind``, ``_version`` (written), ``_readable`` (read) and ``_source``
    (the default name in errors).
    """

    _kind: ClassVar[str]
    _version: ClassVar[int]
    _readable: ClassVar[tuple[int, ...]]
    _source: ClassVar[str] = "<document>"
    #: Older versions no longer read: version -> what the reader should do instead.
    _retired: ClassVar[Mapping[int, str]] = {}

    def to_json(self) -> dict[str, Any]:
        return {"kind": self._kind, "schema_version": self._version, **super().to_json()}

    def dumps(self) -> str:
        return dumps(self.to_json())

    @classmethod
    def from_json(cls: type[_D], data: Any, source: str | None = None) -> _D:
        source = cls._source if source is None else source
        if isinstance(data, Mapping) and data.get("kind") == cls._kind:
            version = data.get("schema_version")
            if type(version) is int and version in cls._retired:
                raise SchemaVersionError(
                    f"{source}: {cls._kind} schema version {version} is no longer read"
                    f" (this neuronasv reads {', '.join(map(str, cls._readable))})",
                    hint=cls._retired[version],
                )
        doc = check_schema(data, kind=cls._kind, supported=cls._readable, source=source)
        return cls._codec_plan().decode(doc, source)

    @classmethod
    def loads(cls: type[_D], text: str, source: str | None = None) -> _D:
        source = cls._source if source is None else source
        return cls.from_json(loads(text, source=source), source)
