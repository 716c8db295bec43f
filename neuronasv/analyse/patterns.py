"""Which series a rule, an acknowledgement or a bisection means: patterns on the series' id.

A series is its structured id (:class:`~neuronasv.model.SeriesId`: benchmark, params,
workload, shape, dtype, op; its metric read from the benchmark). Its label
(``rmsnorm.naive 4x512 bfloat16 · aten::mul``) is for people: two series can share one (an
op named ``a · b``, or ``x (memory)``), and its wording may change. So a pattern is
parsed once from the text a user writes into a :class:`SeriesPattern` and matched on the
id's fields; no code path reads a label back into an id.

The language (``neuronasv ack PATTERN``, ``--rule 'PATTERN=RULE'``, ``neuronasv bisect
--series PATTERN``)::

    workload=rmsnorm.naive op=aten::mul shape=4x512
    workload='rmsnorm.*' dtype=bfloat16 metric=memory
    workload=transformer.block op=                      # the workload total (no op)
    benchmark=bench.time_sort params="'1000', 'int'"    # a plain asv benchmark

Whitespace-separated ``FIELD=GLOB`` terms, quoted as in a shell where a value holds spaces
(``op="## Call CompiledFxGraph ##"``); every term must hold (AND), each field at most once.
``GLOB`` is fnmatch (``*``, ``?``, ``[...]``, case-sensitive) on the field's value:

========== =======================================================================
benchmark  the asv benchmark (``devtime.RmsnormNaive.devtime_op``)
params     asv's parameter values as asv stores them, joined by ``", "``
workload   the workload (``rmsnorm.naive``)
shape      ``4x512``
dtype      ``bfloat16``
op         the op (``aten::mul``, ``module:<path>``); empty for the workload total
metric     a registry name (:mod:`neuronasv.metrics`; :attr:`SeriesId.metric`)
========== =======================================================================

A field the series does not have reads as empty: ``op=`` is the total, ``op=?*`` any op
but not the total, ``op=*`` both.

**The earlier form** — any text that does not start with a ``FIELD=`` term — still reads
as it did: an fnmatch glob over the series' *version-1 names*, its label in the wording of
version 1 (``WORKLOAD SHAPE DTYPE · OP``, then `` (METRIC)`` for a series of another
metric than device time), its asv benchmark and ``benchmark(params)``
(``rmsnorm.naive*``, ``*aten::add*``, ``rmsnorm.naive 4x512 float32 · aten::mul
(memory)``). Those names are made from the id's fields here
(:func:`v1_names`), in that fixed wording, never from :attr:`SeriesId.label`: a pattern
written against version 1's labels keeps matching the same series when the label changes.
Such a text cannot tell apart two series whose version-1 labels are equal; the field form
can, and the errors that list series (:func:`no_match_error`, :func:`ambiguous_error`)
name each in it.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from neuronasv.errors import UsageError
from neuronasv.metrics import DEVTIME
from neuronasv.metrics import names as metric_names
from neuronasv.model import SeriesId

__all__ = [
    "FIELDS",
    "SeriesPattern",
    "ambiguous_error",
    "field_value",
    "glob_literal",
    "no_match_error",
    "v1_names",
]

#: The fields a pattern's terms name, in the order :meth:`SeriesPattern.exact` writes them.
FIELDS: tuple[str, ...] = ("workload", "shape", "dtype", "op", "metric", "benchmark", "params")
_TERM = re.compile(r"([a-z]+)=(.*)", re.DOTALL)
#: Characters a value may hold unquoted in the text :meth:`SeriesPattern.exact` writes.
_BARE = re.compile(r"[A-Za-z0-9_@%+=:,./\-\[\]*?!^]*")


def glob_literal(text: str) -> str:
    """A glob that matches ``text`` only (``*``, ``?`` and ``[`` bracketed)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def field_value(series: SeriesId, name: str) -> str:
    """The value a term on ``name`` matches (a field the series lacks reads as empty)."""
    if name == "params":
        return ", ".join(series.params)
    if name == "metric":
        return series.metric or ""
    value = getattr(series, name)
    return "" if value is None else str(value)


@lru_cache(maxsize=65536)
def v1_names(series: SeriesId) -> tuple[str, ...]:
    """The names an earlier-form pattern matches: the version-1 label (this wording, fixed
    here: ``WORKLOAD SHAPE DTYPE · OP``, `` (METRIC)`` after it for another metric than
    device time, or ``benchmark(params)`` for a plain asv benchmark), the benchmark,
    ``benchmark(params)``."""
    call = f"{series.benchmark}({', '.join(series.params)})" if series.params else ""
    if series.workload is not None:
        text = " ".join(p for p in (series.workload, series.shape or "", series.dtype or "") if p)
        text = f"{text} · {series.op}" if series.op else text
        metric = series.metric
        label = text if metric in (None, DEVTIME.name) else f"{text} ({metric})"
    else:
        label = call or series.benchmark
    return tuple(n for n in (label, series.benchmark, call) if n)


def _quote(value: str) -> str:
    """``value`` as :func:`shlex.split` reads it back: bare, else double-quoted."""
    if _BARE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _split(text: str) -> list[str]:
    """Shell-style words (quotes, backslashes); ``#`` is no comment (op names hold it)."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as exc:  # no closing quotation
        raise UsageError(f"series pattern {text!r}: {exc}") from None


@dataclass(frozen=True)
class SeriesPattern:
    """A parsed pattern (see the module doc).

    Attributes:
        text: as written (what ``ack --list`` and a rule's description print).
        terms: ``(field, glob)`` pairs of the field form; empty for the earlier form.
        legacy: the earlier form's glob over :func:`v1_names`, else None.
    """

    text: str
    terms: tuple[tuple[str, str], ...] = ()
    legacy: str | None = None
    _compiled: tuple[tuple[str, re.Pattern[str]], ...] = field(
        default=(), repr=False, compare=False
    )
    _legacy_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, text: str, *, earlier: bool | None = None) -> SeriesPattern:
        """``text`` in the field form, or the earlier form (``earlier``: None = decide by
        the text: the field form when it starts with a ``FIELD=`` term; True = the earlier
        form whatever it looks like, as a version-1 acknowledgements file holds).

        Raises:
            UsageError: an empty pattern; in the field form an unknown field (the known
                ones named), a field twice, a word that is no ``FIELD=GLOB`` term, an
                unclosed quote.
        """
        if not text.strip():
            raise UsageError("empty series pattern (e.g. workload=rmsnorm.naive op=aten::mul)")
        if earlier or (earlier is None and not cls._looks_structured(text)):
            return cls(text, legacy=text, _legacy_re=re.compile(fnmatch.translate(text)))
        terms: list[tuple[str, str]] = []
        for word in _split(text):
            m = _TERM.fullmatch(word)
            if not m or m.group(1) not in FIELDS:
                name = m.group(1) if m else word
                near = difflib.get_close_matches(name, FIELDS, n=1)
                hint = f" (did you mean {near[0]}=?)" if near else ""
                raise UsageError(
                    f"series pattern {text!r}: {word!r} is no FIELD=GLOB term{hint};"
                    f" fields: {', '.join(FIELDS)}"
                )
            if any(f == m.group(1) for f, _ in terms):
                raise UsageError(f"series pattern {text!r}: {m.group(1)}= given twice")
            terms.append((m.group(1), m.group(2)))
        compiled = tuple((f, re.compile(fnmatch.translate(g))) for f, g in terms)
        return cls(text, tuple(terms), _compiled=compiled)

    @staticmethod
    def _looks_structured(text: str) -> bool:
        m = _TERM.match(text.lstrip())
        return m is not None and m.group(1) in FIELDS

    @classmethod
    def exact(cls, series: SeriesId) -> SeriesPattern:
        """The field-form pattern of exactly ``series`` (every field it has, each value
        literal): what the CI bisect step hands ``neuronasv bisect``, no label involved."""
        return cls.parse(" ".join(f"{f}={_quote(glob_literal(v))}" for f, v in _identity(series)))

    @classmethod
    def naming(cls, series: SeriesId) -> SeriesPattern:
        """The field-form pattern people would write for ``series``: workload, shape,
        dtype, op and metric for neuronasv's series, benchmark and params for a plain asv
        one (exact unless two suites register one workload)."""
        keep = ("benchmark", "params") if series.workload is None else FIELDS[:5]
        terms = [(f, v) for f, v in _identity(series) if f in keep]
        return cls.parse(" ".join(f"{f}={_quote(glob_literal(v))}" for f, v in terms))

    @property
    def structured(self) -> bool:
        return self.legacy is None

    def matches(self, series: SeriesId) -> bool:
        if self._legacy_re is not None:
            return any(self._legacy_re.match(n) for n in v1_names(series))
        return all(rx.match(field_value(series, f)) for f, rx in self._compiled)

    def metrics(self) -> tuple[str, ...]:
        """The registry's metrics (:mod:`neuronasv.metrics`) a series this pattern matches
        may measure: those its ``metric=`` term matches, every one without such a term."""
        glob = dict(self.terms).get("metric")
        every = metric_names()
        return every if glob is None else tuple(m for m in every if fnmatch.fnmatchcase(m, glob))

    def select(self, candidates: Iterable[SeriesId]) -> list[SeriesId]:
        return [s for s in candidates if self.matches(s)]

    def __str__(self) -> str:
        return self.text


def _identity(series: SeriesId) -> list[tuple[str, str]]:
    """Every field ``series`` has, in :data:`FIELDS` order (op empty for a total)."""
    out = []
    for name in FIELDS:
        value = field_value(series, name)
        if value or (name == "op" and series.workload is not None):
            out.append((name, value))
    return out


def _listed(series: Sequence[SeriesId], limit: int = 5) -> str:
    shown = [f"{s.label!r} ({SeriesPattern.naming(s).text})" for s in series[:limit]]
    more = f", and {len(series) - limit} more" if len(series) > limit else ""
    return "; ".join(shown) + more


def _similar(glob: str, value: str) -> float:
    """1 when ``glob`` matches ``value``, else how alike the two texts are (0..1)."""
    if fnmatch.fnmatchcase(value, glob):
        return 1.0
    return difflib.SequenceMatcher(None, glob, value).ratio()


def _closeness(pattern: SeriesPattern, series: SeriesId) -> float:
    """How near ``series`` is to ``pattern``: per term of the field form, 1 for a match,
    else the likeness of the glob and the value; the earlier form, its best name's."""
    if pattern.structured:
        return sum(_similar(g, field_value(series, f)) for f, g in pattern.terms)
    return max(_similar(pattern.text, n) for n in v1_names(series))


def no_match_error(
    pattern: SeriesPattern, candidates: Sequence[SeriesId], where: str
) -> UsageError:
    """``pattern`` matched none of ``candidates`` (those ``where``): the error names the
    nearest few (within three quarters of the nearest's likeness), each with the field-form
    pattern that names it."""
    scored = sorted(
        ((_closeness(pattern, s), s) for s in candidates), key=lambda x: (-x[0], x[1].label)
    )
    best = scored[0][0] if scored else 0.0
    near = [s for score, s in scored if score > 0 and score >= 0.75 * best][:5]
    tail = f"; nearest: {_listed(near)}" if near else ""
    return UsageError(
        f"no series matches {pattern.text!r} {where} ({len(candidates)} series{tail})",
        hint="name a series by its fields, e.g. workload=rmsnorm.naive shape=4x512"
        f" dtype=bfloat16 op=aten::mul (op= for the total; metric= one of"
        f" {', '.join(metric_names())}); docs/analysis.md#series-patterns",
    )


def ambiguous_error(pattern: SeriesPattern, found: Sequence[SeriesId], where: str) -> UsageError:
    """``pattern`` matched several series where one is needed: the error names them, each
    with the field-form pattern that names it alone."""
    return UsageError(
        f"{pattern.text!r} matches {len(found)} series {where}: {_listed(found)};"
        " give a pattern that names one",
        hint="copy one of the field forms above (each names its series alone)",
    )
