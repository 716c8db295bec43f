"""asv's JSON, decoded fast: the bytes of a results file or sidecar as Python values.

The concern apart from :mod:`neuronasv.store.asvresults` (the one reader of asv's format,
which decides what the values mean): how the bytes become values, the same values and
errors as the stdlib's ``json`` gives, 5-7x faster.

Speed: see docs/publishing.md.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from neuronasv.errors import CorruptResultsError
from neuronasv.model._codec import MAX_INT_DIGITS, check_strings, parse_json

__all__ = [
    "JSON_DECODER",
    "SIDECAR_HEAD_DECODER",
    "SIDECAR_HEAD_FIELDS",
    "asv_float",
    "decode_asv_json",
]

# Parsing dominates every load (asv results: ~140 kB of floats per commit at 1,000
# series; sidecars: ~230 kB, mostly the series list). ``msgspec`` decodes 5-7x faster
# than the stdlib, but like every strict parser it rejects asv's bare ``NaN`` and
# ``Infinity``. So a byte pre-pass turns those tokens, outside strings only, into the
# strings below, which the readers map back (``numpy`` also reads them as floats).
# Anything unusual (a backslash anywhere, the marker strings already present, any
# msgspec error) takes the stdlib path instead: same values, same error messages.

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_BARE = re.compile(rb"-Infinity|Infinity|NaN")
_MARK = {b"NaN": b'"nan"', b"Infinity": b'"inf"', b"-Infinity": b'"-inf"'}
#: The strict (msgspec) decoder of pre-passed bytes.
JSON_DECODER = msgspec.json.Decoder()
# An integer part of more than MAX_INT_DIGITS digits (not a fraction's or exponent's).
_LONG_DIGITS = re.compile(rb"(?<![\d.eE])(?<![eE][+-])\d{%d}" % (MAX_INT_DIGITS + 1))


# Every byte that may precede the first digit of an integer literal (anything but a
# digit, ``.``, ``e``, ``E`` or ``"``) becomes ``x``; every digit ``1``; the rest ``.``.
_RUN_TABLE = bytes(
    0x31 if 0x30 <= c <= 0x39 else 0x2E if c in b'.eE"' else 0x78 for c in range(256)
)
_RUN_NEEDLE = b"x" + b"1" * (MAX_INT_DIGITS + 1)


def _long_integer(raw: bytes) -> bool:
    """Does ``raw`` hold an integer literal longer than MAX_INT_DIGITS outside strings?

    Same answer as searching :data:`_LONG_DIGITS` outside strings, without the regex:
    Python's ``re`` walks digit-heavy text at ~20 MB/s (5 ms of a 140 kB results file,
    five times msgspec's decode). The bytes are mapped once (``bytes.translate``, C
    speed) so that a digit run that does not follow a digit, ``.``, ``e``, ``E`` or ``"``
    and is longer than the limit reads ``x111…``; ``bytes.find`` finds those (none, in a
    results file: the fractions' long runs follow a ``.``, a ``version`` digest's its
    opening quote). Where the run may be a number but is not a candidate, the text is
    not JSON and msgspec fails, so the stdlib decides and nothing is lost: a number right
    after a closing quote, or a run starting with 0 (a JSON integer has no leading zero)
    that holds a long integer after it. Each candidate is then checked as the regex
    would (``e+``/``E-`` before it) and skipped when inside a string (a name: text, not a
    number). Without backslashes a ``"`` always opens or closes a string, so a run is
    inside one exactly when the number of quotes before it is odd; with a backslash
    anywhere every candidate counts (the conservative answer: the stdlib path).
    """
    mapped = raw.translate(_RUN_TABLE)
    n = len(_RUN_NEEDLE) - 1
    cands = [0] if mapped.startswith(_RUN_NEEDLE[1:]) else []
    at = mapped.find(_RUN_NEEDLE)
    while at >= 0:
        cands.append(at + 1)
        at = mapped.find(_RUN_NEEDLE, at + n)
    cands = [s for s in cands if raw[s] != 48]
    if not cands:
        return False
    if b"\\" in raw:
        return any(_LONG_DIGITS.match(raw, s) for s in cands)
    quotes, last = 0, 0
    for s in cands:
        quotes += raw.count(b'"', last, s)
        last = s
        if quotes % 2 == 0 and _LONG_DIGITS.match(raw, s):
            return True
    return False


def _mark_nonfinite(raw: bytes) -> bytes | None:
    """``raw`` with bare NaN/Infinity (outside strings) as marker strings; None: use stdlib.

    Without backslashes a ``"`` always opens or closes a string, so a token is outside
    every string exactly when the number of quotes before it is even.
    """
    if b"NaN" not in raw and b"Infinity" not in raw:
        return raw
    if b"\\" in raw or b'"nan"' in raw or b'"inf"' in raw or b'"-inf"' in raw:
        return None
    out: list[bytes] = []
    last = 0  # end of the previous token
    quotes = 0  # quotes before ``last``
    for m in _BARE.finditer(raw):
        start = m.start()
        quotes += raw.count(b'"', last, start)
        if quotes % 2 == 0:
            out.append(raw[last:start])
            out.append(_MARK[m.group()])
        else:
            out.append(raw[last : m.end()])
        last = m.end()
    out.append(raw[last:])
    return b"".join(out)


def decode_asv_json(raw: bytes, source: str) -> tuple[Any, bool]:
    """Decode an asv JSON document (bare ``NaN``/``Infinity`` allowed, as asv writes).

    Returns:
        ``(data, marked)``: when ``marked`` is True, non-finite numbers appear in
        ``data`` as the strings ``"nan"``, ``"inf"``, ``"-inf"`` (see
        :func:`asv_float`); otherwise as Python floats, exactly as ``json.loads``.

    Raises:
        CorruptResultsError: not UTF-8, empty, or not valid JSON (names ``source``).
    """
    # An integer literal too long for a measurement goes to the stdlib decoder, which
    # refuses it before converting it (msgspec would convert it). msgspec refuses bare
    # NaN/Infinity, so the bytes are searched for them only when it did: most files
    # have none (two substring searches were a fifth of a results file's parse).
    if not _long_integer(raw):
        try:
            try:
                return JSON_DECODER.decode(raw), False
            except (msgspec.DecodeError, msgspec.ValidationError):
                fast = _mark_nonfinite(raw)
                if fast is not None and fast is not raw:
                    return JSON_DECODER.decode(fast), True
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass  # the stdlib decides, and words the error (lone surrogates land here too)
        except RecursionError:
            raise CorruptResultsError(f"{source}: JSON nested too deeply") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptResultsError(f"{source}: not UTF-8 text ({exc.reason})") from exc
    if not text.strip():
        raise CorruptResultsError(f"{source}: empty file")
    data = parse_json(text, source)  # asv writes bare NaN: constants are allowed here
    check_strings(data, source)  # e.g. a lone surrogate in a benchmark or op name
    return data, False


def asv_float(v: Any, marked: bool) -> Any:
    """A value from :func:`decode_asv_json` with the marker strings mapped back to floats."""
    if marked and v.__class__ is str and v in _NONFINITE:
        return _NONFINITE[v]
    return v


class _SidecarHead(msgspec.Struct):
    """A sidecar with its bulky lists left undecoded (``msgspec.Raw``)."""

    kind: Any = msgspec.UNSET
    schema_version: Any = msgspec.UNSET
    machine: Any = msgspec.UNSET
    commit_hash: Any = msgspec.UNSET
    env_name: Any = msgspec.UNSET
    created: Any = msgspec.UNSET
    fingerprint: Any = msgspec.UNSET
    traces: Any = msgspec.UNSET
    failures: Any = msgspec.UNSET
    state: Any = msgspec.UNSET  # sidecar schema 2: the machine at the run's start and end
    series: msgspec.Raw = msgspec.Raw(b"[]")
    profiles: msgspec.Raw = msgspec.Raw(b"[]")


#: Decodes a sidecar's head (its lists stay raw bytes).
SIDECAR_HEAD_DECODER = msgspec.json.Decoder(_SidecarHead)
#: The head's fields a sidecar document is rebuilt from (its lists are decoded apart).
SIDECAR_HEAD_FIELDS = tuple(
    f for f in _SidecarHead.__struct_fields__ if f not in ("series", "profiles")
)
