"""Regression rules parsed from text, with per-benchmark-pattern overrides.

A rule is ``STAT:THRESHOLD`` (pytest-benchmark's ``--benchmark-compare-fail`` syntax):

* ``median:5%`` — the head median is at least 5 % above the base median (relative);
* ``min:0.0001`` — the head minimum is at least 0.0001 (series unit, seconds) above
  the base minimum (absolute);
* ``STAT`` is ``median``, ``mean`` or ``min``.

A rule set is a default rule plus ``PATTERN=RULE`` overrides, where ``PATTERN`` is a
series pattern (:mod:`neuronasv.analyse.patterns`: ``op=aten::add workload=rmsnorm.*``, or
the earlier form, a glob over the version-1 label, benchmark and ``benchmark(params)``:
``*aten::add*``), parsed once and matched on the series' id; the *last* matching override
wins, so later, narrower lines refine earlier ones. Example::

    RuleSet.parse(["median:5%", "op=aten::add=median:20%", "*aten::mul*=median:10%"])

A rule only sets the minimum effect; significance comes from the test in ``pairwise``.
The reason string a rule returns goes into the report verbatim.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from neuronasv.analyse.patterns import SeriesPattern
from neuronasv.errors import UsageError
from neuronasv.model import FindingsDocument, SeriesId

__all__ = ["DEFAULT_RULE", "Rule", "RuleSet", "failing"]

_STATS = ("median", "mean", "min")
_RULE_RE = re.compile(
    r"^\s*(median|mean|min)\s*:\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(%?)\s*$"
)


@dataclass(frozen=True)
class Rule:
    """One minimum-effect rule.

    Attributes:
        stat: ``median``, ``mean`` or ``min``.
        threshold: fraction (0.05 for 5 %) when ``relative``, else an absolute amount.
        relative: percent rule vs absolute rule.
        text: the text it was parsed from.
    """

    stat: str
    threshold: float
    relative: bool = True
    text: str = ""

    @classmethod
    def parse(cls, text: str) -> Rule:
        """Parse ``median:5%`` / ``min:0.001``; :class:`UsageError` names the bad text."""
        m = _RULE_RE.match(text)
        if not m:
            raise UsageError(
                f"bad rule {text!r}: expected STAT:THRESHOLD such as 'median:5%' or"
                f" 'min:0.0001' (STAT one of {', '.join(_STATS)})"
            )
        value = float(m.group(2))
        relative = m.group(3) == "%"
        if not math.isfinite(value):
            raise UsageError(f"bad rule {text!r}: threshold must be finite")
        return cls(m.group(1), value / 100.0 if relative else value, relative, text.strip())

    def describe(self) -> str:
        if self.relative:
            return f"{self.stat} +{self.threshold * 100:g} %"
        return f"{self.stat} +{self.threshold:g}"

    def statistic(self, samples: Sequence[float]) -> float:
        import numpy as np  # here: `neuronasv ack` imports this module for series names

        a = np.asarray(samples, dtype=float)
        if self.stat == "min":
            return float(a.min())
        if self.stat == "mean":
            return float(a.mean())
        return float(np.median(a))

    def exceeded(self, base: float, head: float) -> bool:
        """True when ``head`` is worse than ``base`` by at least the threshold."""
        if self.relative:
            return base > 0 and head / base - 1.0 >= self.threshold - 1e-12
        return head - base >= self.threshold

    def improved(self, base: float, head: float) -> bool:
        """The mirror of :meth:`exceeded` (head better by at least the threshold)."""
        if self.relative:
            return base > 0 and 1.0 - head / base >= self.threshold - 1e-12
        return base - head >= self.threshold


DEFAULT_RULE = Rule("median", 0.05, True, "median:5%")


def failing(doc: FindingsDocument, rule: Rule, *, confirmed_only: bool = False) -> list[str]:
    """Labels of the unacknowledged rows that fire the gate (``--fail-on``).

    The gate is decided once, in analyse, per row (``Finding.state.gate``; the policy per
    axis is ``settings["gate"]``): a slower time fires it only beyond ``rule`` too; more
    work where the time could not be decided fires it whatever the Δ. ``confirmed_only``
    (``neuronasv confirm --fail-on``) leaves out slower times the rounds did not confirm.
    """
    out = []
    for f in doc.findings:
        st = f.state
        if not st.gate or f.acknowledged is not None:
            continue
        if st.time == "slower":
            if confirmed_only and not st.confirmed:
                continue
            if f.base is None or f.head is None or not rule.exceeded(f.base, f.head):
                continue
        out.append(f.series.label)
    return out


@dataclass(frozen=True)
class RuleSet:
    """A default rule plus ordered ``(pattern, rule)`` overrides."""

    default: Rule = DEFAULT_RULE
    overrides: tuple[tuple[SeriesPattern, Rule], ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, lines: Iterable[str]) -> RuleSet:
        """Parse ``RULE`` (the default, at most one) and ``PATTERN=RULE`` lines (the rule
        after the last ``=``; the pattern may hold ``=``: ``op=aten::add=median:20%``)."""
        default = DEFAULT_RULE
        seen_default = False
        overrides: list[tuple[SeriesPattern, Rule]] = []
        for raw in lines:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if "=" in line:
                pattern, _, rule = line.rpartition("=")
                if not pattern.strip():
                    raise UsageError(f"bad rule {raw!r}: empty pattern before '='")
                overrides.append((SeriesPattern.parse(pattern.strip()), Rule.parse(rule)))
            else:
                if seen_default:
                    raise UsageError(f"two default rules given ({default.text!r}, {line!r})")
                default, seen_default = Rule.parse(line), True
        return cls(default, tuple(overrides))

    def for_series(self, s: SeriesId) -> Rule:
        """The rule for one series (last matching override, else the default)."""
        rule = self.default
        for pattern, r in self.overrides:
            if pattern.matches(s):
                rule = r
        return rule

    def describe(self) -> list[str]:
        return [self.default.text] + [f"{p.text}={r.text}" for p, r in self.overrides]
