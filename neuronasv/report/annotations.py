"""GitHub Actions workflow-command annotations (``::warning title=...::message``).

GitHub shows at most 10 annotations of each kind (error, warning, notice) per step, so
each kind is capped at ``max_per_kind``; when more exist, the last slot says how many more
and points to the job summary. Messages are one line: untrusted text is cleaned and then
escaped the way ``@actions/core`` escapes workflow commands.

Kinds: ``warning`` for rows that fire the gate, are slower or carry more work (titled by
their stored two-axis state, :mod:`neuronasv.report.rowwords`), open change-point
regressions, environment changes and unreadable results; ``notice`` for the other moved
rows and the series whose time was not decided; ``error`` for benchmarks that failed.
Whether a row fails the job is ``--fail-on``'s business, not ours.
"""

from __future__ import annotations

from collections.abc import Sequence

from neuronasv.format import format_delta_pct, format_p, format_pair
from neuronasv.log import workflow_data, workflow_property
from neuronasv.model.findings import ChangePoint, Finding, FindingsDocument
from neuronasv.report.digest import digest
from neuronasv.report.escape import clean
from neuronasv.report.headline import headline
from neuronasv.report.rowwords import state_words

__all__ = ["MAX_PER_KIND", "annotation", "render_annotations"]

MAX_PER_KIND = 10


def annotation(kind: str, title: str, message: str) -> str:
    """One workflow command line, escaped (``kind`` is error, warning or notice)."""
    if kind not in ("error", "warning", "notice"):
        raise ValueError(f"unknown annotation kind {kind!r}")
    return (
        f"::{kind} title={workflow_property(clean(title, max_len=200))}"
        f"::{workflow_data(clean(message, max_len=900))}"
    )


def _finding_message(f: Finding) -> str:
    # The Analyse stage's sentence (same words as ``neuronasv compare``), plus the numbers.
    text = f"{headline(f)} — {format_pair(f.base, f.head, f.unit)}"
    p = format_p(f.p_adjusted if f.p_adjusted is not None else f.p_value)
    return f"{text}, p={p}" if p else text


def _cp_message(c: ChangePoint) -> str:
    return (
        f"{c.series.label}: {format_pair(c.before, c.after, c.unit)} "
        f"({format_delta_pct(c.ratio)}, p={format_p(c.p_value)}) between "
        f"{c.commit_before[:10]} and {c.commit_after[:10]}"
    )


def _cap(kind: str, items: Sequence[tuple[str, str]], limit: int) -> list[str]:
    if len(items) <= limit:
        return [annotation(kind, t, m) for t, m in items]
    keep = [annotation(kind, t, m) for t, m in items[: limit - 1]]
    rest = len(items) - (limit - 1)
    keep.append(annotation(kind, f"{rest} more", f"{rest} more {kind}s: see the job summary"))
    return keep


def render_annotations(doc: FindingsDocument, *, max_per_kind: int = MAX_PER_KIND) -> list[str]:
    """Workflow-command lines for ``doc``, at most ``max_per_kind`` per kind, deterministic."""
    d = digest(doc)
    warnings: list[tuple[str, str]] = []
    notices: list[tuple[str, str]] = []
    errors: list[tuple[str, str]] = []
    for f in (*d.regressions, *d.improvements):
        # the row's stored state, in words beside its Δ and CI (never the verdict word)
        item = (f"{f.series.label}: {state_words(f)}", _finding_message(f))
        st = f.state
        alarm = st is not None and (st.gate != "" or st.time == "slower" or st.work == "more")
        (warnings if alarm else notices).append(item)
    for c in d.open_regressions:
        warnings.append(
            (f"Open regression {format_delta_pct(c.ratio)}: {c.series.label}", _cp_message(c))
        )
    if d.env_changes:
        changes = "; ".join(
            f"{e.key}: {e.before or 'none'} → {e.after or 'none'}" for e in d.env_changes
        )
        warnings.append(("Environment changed", changes))
    for e in doc.load_errors:
        warnings.append(("Results not read", e))
    for c in d.change_improvements:
        notices.append(
            (f"Improvement {format_delta_pct(c.ratio)}: {c.series.label}", _cp_message(c))
        )
    for f in d.noisy:
        notices.append(
            (f"Time not decided: {f.series.label}", f.reason or "too noisy for a verdict")
        )
    for f in d.failed:
        errors.append((f"Benchmark failed: {f.series.label}", f.reason or "benchmark failed"))
    return (
        _cap("error", errors, max_per_kind)
        + _cap("warning", warnings, max_per_kind)
        + _cap("notice", notices, max_per_kind)
    )
