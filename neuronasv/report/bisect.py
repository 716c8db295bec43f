"""A bisection for people: the culprit, why, and what it cost (pure formatting).

Every view of a culprit — ``neuronasv bisect``'s output, the regression issue, the site's
regressions page, the Atom feed — takes its words from here. The cause sentence is the PR
comment's own (:func:`neuronasv.report.causes.cause_headline` and
:func:`~neuronasv.report.causes.work_sentence` over the stored comparison of the culprit
with its parent), and the module chain its :func:`~neuronasv.report.causes.module_chain_text`.
Untrusted text (commit subjects, op names) goes through the ``code``/``text`` callables the
caller passes (escapers for markdown, identity for plain text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from neuronasv.errors import NeuronasvError
from neuronasv.format import (
    format_calls,
    format_count,
    format_delta_pct,
    format_pair,
    format_pct,
    format_wall,
    plural,
)
from neuronasv.metrics import by_name
from neuronasv.model import FindingsDocument, WorkChange
from neuronasv.model.bisect import BisectDocument
from neuronasv.model.culprit import Culprit, is_full_hash
from neuronasv.report.causes import cause_headline, cause_views, module_chain_text, work_sentence
from neuronasv.report.digest import digest
from neuronasv.report.escape import md_code, md_text, plain_model

__all__ = [
    "cause_sentence",
    "cost_sentence",
    "culprit_line",
    "culprit_markdown",
    "culprit_plain",
    "explanation_of",
    "module_chain",
    "render_text",
    "work_lines",
]

Code = Callable[[str], str]


def _plain(s: str) -> str:
    return s


def explanation_of(c: Culprit) -> FindingsDocument | None:
    """The stored comparison of the culprit with its parent (None: none, or unreadable)."""
    if not c.explanation:
        return None
    try:
        return FindingsDocument.from_json(c.explanation, "<culprit explanation>")
    except NeuronasvError:
        return None


def culprit_line(c: Culprit, *, code: Code = _plain, text: Code = _plain) -> str:
    """``culprit 1a2b3c4d5e6f "fold the scale into the gate" (PR #12)``, ``undecided between
    1a2b3c4d5e6f and 9f8e7d6c5b4a``, or ``no change between ...`` (an exact axis: a fact) /
    ``no change shown between ...`` (device time, records written before issue 30's fix:
    a time search now says ``undecided between`` its ends)."""
    if c.outcome == "no change":
        shown = " shown" if c.axis == "time" else ""
        return f"no change{shown} between {code(c.lo[:12])} and {code(c.hi[:12])}"
    if not c.found:
        return f"undecided between {code(c.lo[:12])} and {code(c.hi[:12])}"
    out = f"culprit {code(c.commit[:12])}"
    if c.subject:
        out += f" “{text(c.subject)}”"
    if c.pull is not None:
        out += f" (PR #{c.pull.number}" + (f": {text(c.pull.title)}" if c.pull.title else "") + ")"
    return out


def cost_sentence(c: Culprit) -> str:
    """``6 commits measured in 5.8 min; exact (work)`` (an exact metric's axis: its title
    from :mod:`neuronasv.metrics`) or ``...; error rate at most 1.0 % (device time,
    interleaved rounds)``."""
    if c.measured == 0:
        how = "from results already stored"
    else:
        how = f"{plural(c.measured, 'commit')} measured"
        if c.seconds is not None:
            how += f" in {format_wall(c.seconds)}"
    if c.axis == "time":
        bound = f"error rate at most {format_pct(c.alpha)} " if c.alpha is not None else ""
        return f"{how}; {bound}(device time, interleaved rounds)"
    return f"{how}; exact ({'work' if c.axis == 'work' else by_name(c.axis).title})"


def cause_sentence(c: Culprit, *, code: Code = _plain) -> str:
    """The culprit's cause as the PR comment words it: its first cause's headline (the
    comment's first cause: :func:`neuronasv.report.digest.digest`) and what changed in the
    work, or where the time moved (empty without a stored comparison)."""
    doc = explanation_of(c)
    if doc is None:
        return ""
    views = list(digest(doc).causes) or cause_views(doc)
    if not views:
        return work_sentence(doc.work, code=code)
    v = views[0]
    head = cause_headline(v, code=code)
    if v.work:
        return f"{head}. {work_sentence(v.work, code=code)}"
    if v.cause.ops:
        ops = ", ".join(code(o) for o in v.cause.ops[:3])
        return f"{head}. Time moved in {ops} with no recorded change of work."
    return head


def module_chain(c: Culprit, *, code: Code = _plain) -> str:
    """The module chain of the configuration's total, as the comment shows it."""
    doc = explanation_of(c)
    if doc is None:
        return ""
    for f in doc.findings:
        if f.series.op is None and f.module_chain:
            return module_chain_text(f, code=code)
    return ""


def _work_line(w: WorkChange, code: Code) -> str:
    new = f"{w.kind} " if w.kind in ("new", "removed") else ""
    calls = format_calls(w.calls_base, w.calls_head)
    bits = [f"{new}{code(w.op)}: " + (f"calls {calls}" if calls else w.kind)]
    added = [x for x in w.signature_head if x not in w.signature_base]
    gone = [x for x in w.signature_base if x not in w.signature_head]
    if added or gone:
        was, now = "; ".join(gone[:2]) or "–", "; ".join(added[:2]) or "–"
        bits.append(f"inputs {code(was)} → {code(now)}")
    if w.bytes_base is not None or w.bytes_head is not None:
        bits.append(f"bytes {format_pair(w.bytes_base, w.bytes_head, 'bytes')}")
    if w.instructions_base is not None and w.instructions_head is not None:
        was, now = format_count(w.instructions_base), format_count(w.instructions_head)
        bits.append(f"instructions {was} → {now}")
    return ", ".join(bits)


def work_lines(c: Culprit, *, code: Code = _plain, limit: int = 12) -> list[str]:
    """One line per op whose work changed between the parent and the culprit (exact)."""
    doc = explanation_of(c)
    if doc is None:
        return []
    lines = [_work_line(w, code) for w in doc.work[:limit]]
    if len(doc.work) > limit:
        lines.append(f"{plural(len(doc.work) - limit, 'more op')}")
    return lines


def culprit_markdown(c: Culprit, *, repository: str | None = None) -> list[str]:
    """Markdown list items for an issue: the culprit, its cause, its work, its proof."""
    line = culprit_line(c, code=md_code, text=md_text)
    if not c.found:
        if c.outcome != "undecided":
            return []
        return [f"- Bisection: {line} (the narrowest range it proved) — {cost_sentence(c)}"]
    out = [f"- **Culprit:** {line.removeprefix('culprit ')} — {cost_sentence(c)}"]
    if (repository and all(ch.isalnum() or ch in "-_./" for ch in repository)
            and is_full_hash(c.commit)):  # fmt: skip  # a link from a validated hash only
        out.append(f"- [The culprit commit](https://github.com/{repository}/commit/{c.commit})")
    cause = cause_sentence(c, code=md_code)
    if cause:
        out.append(f"- Cause: {cause}")
    chain = module_chain(c, code=md_code)
    if chain:
        out.append(f"- Module chain: {chain}")
    work = work_lines(c, code=md_code, limit=6)
    if work:
        out.append("- Work between its parent and it (exact): " + "; ".join(work))
    out.append(f"- Proof: {md_text(c.decided_by, max_len=400)}")
    return out


def culprit_plain(c: Culprit) -> str:
    """One plain sentence (the site's regressions page, the Atom feed): escape to print."""
    if c.outcome == "no change":
        return ""
    text = culprit_line(c)
    if c.found:
        cause = cause_sentence(c)
        if cause:
            text += f" — {cause}"
    else:
        text = f"bisection {text}"
    return f"{text} ({cost_sentence(c)})"


def _probe_lines(doc: BisectDocument) -> Sequence[str]:
    out = []
    for p in doc.probes:
        value = ""
        if p.value is not None:
            value = (
                format_delta_pct(p.value) if doc.result.axis == "time" else format_count(p.value)
            )
        rounds = f", {p.rounds} rounds" if p.rounds else ""
        out.append(f"  {p.commit[:12]}  {p.verdict:<9} {p.source}{rounds}  {value}".rstrip())
    return out


def render_text(doc: BisectDocument) -> str:
    """``neuronasv bisect``'s output: what it found first, then how (untrusted strings on
    one line of visible characters, by type: :func:`~neuronasv.report.escape.plain_model`)."""
    doc = plain_model(doc)
    c = doc.result
    lines = [f"{doc.series.label} on {doc.machine}: {culprit_line(c)}"]
    if c.found:
        lines.append(f"  first parent {c.lo[:12]}; {c.decided_by}")
        cause = cause_sentence(c)
        if cause:
            lines.append(f"  cause: {cause}")
        chain = module_chain(c)
        if chain:
            lines.append(f"  module chain: {chain}")
        work = work_lines(c)
        if work:
            lines.append("  work between the parent and the culprit (exact):")
            lines += [f"    {w}" for w in work]
    elif c.outcome == "undecided":
        lines.append(f"  the narrowest range proven: {c.lo[:12]}..{c.hi[:12]}; {c.decided_by}")
    else:
        lines.append(f"  {c.decided_by}")
    lines.append(f"  {cost_sentence(c)}; {plural(doc.candidates, 'candidate commit')}")
    lines.append("probes:")
    lines += _probe_lines(doc)
    if doc.side_branch:
        try:
            side = BisectDocument.from_json(doc.side_branch, "<side branch>")
            lines.append(f"side branch: {culprit_line(side.result)}")
        except NeuronasvError:
            pass
    return "\n".join(lines) + "\n"
