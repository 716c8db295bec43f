"""Regressions for machines (JSON) and people (Atom), from a history findings document.

``regressions.json`` is the ``FindingsDocument`` itself (mode ``history``), the same
document ``neuronasv regressions --format json`` writes, so scripts read one schema.
``regressions.atom`` has one entry per regression change point (open ones first); entry
ids are stable (a UUID derived from machine, series and culprit range), so feed readers
do not show an entry twice across publishes. A change point a bisection narrowed names
its culprit commit, subject, PR and cause in the summary (:mod:`neuronasv.report.bisect`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from xml.etree import ElementTree as ET

from neuronasv.format import format_delta_pct
from neuronasv.model import ChangePoint, FindingsDocument
from neuronasv.report.bisect import culprit_plain

__all__ = ["ATOM_NS", "atom_feed", "change_point_id", "regressions_json", "xml_text"]

ATOM_NS = "http://www.w3.org/2005/Atom"
# XML 1.0 forbids most control characters even when escaped: drop them from hostile text.
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot carry removed (escaping is ET's job)."""
    return _XML_BAD.sub("\ufffd", text)


def change_point_id(cp: ChangePoint) -> str:
    """A stable ``urn:uuid:`` for one change point."""
    key = "\x1f".join(
        [cp.machine, cp.series.benchmark, *cp.series.params, cp.commit_before, cp.commit_after]
    )
    return f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'neuronasv:cp:' + key)}"


def regressions_json(doc: FindingsDocument) -> str:
    """The findings document as strict JSON (no NaN; the model refuses it)."""
    return doc.dumps()


def _iso(ms: int | None, fallback: datetime) -> str:
    when = datetime.fromtimestamp(ms / 1000, tz=timezone.utc) if ms else fallback
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def atom_feed(
    doc: FindingsDocument,
    *,
    feed_url: str,
    site_url: str,
    page_url: Callable[[ChangePoint], str | None],
    commit_dates: Mapping[tuple[str, str], int] | None = None,
    now: datetime | None = None,
    title: str = "neuronasv regressions",
) -> bytes:
    """An Atom 1.0 feed (RFC 4287) of the regression change points in ``doc``.

    Args:
        doc: findings document, mode ``history``.
        feed_url: absolute URL of the feed itself (its ``id`` and ``rel=self`` link).
        site_url: the site's index URL.
        page_url: the workload page of a change point (None: the site URL).
        commit_dates: (machine, commit) -> ms since the epoch, for entry ``updated``.
        now: the clock (injected for tests).
        title: feed title.
    """
    clock = now or datetime.now(timezone.utc)
    dates = commit_dates or {}
    ET.register_namespace("", ATOM_NS)
    a = f"{{{ATOM_NS}}}"
    feed = ET.Element(a + "feed")
    ET.SubElement(feed, a + "title").text = xml_text(title)
    ET.SubElement(feed, a + "id").text = feed_url
    ET.SubElement(feed, a + "link", rel="self", href=feed_url)
    ET.SubElement(feed, a + "link", rel="alternate", href=site_url)
    ET.SubElement(ET.SubElement(feed, a + "author"), a + "name").text = "neuronasv"
    regs = [c for c in doc.change_points if c.kind == "regression"]
    updated = [dates.get((c.machine, c.commit_after)) for c in regs]
    newest = max((d for d in updated if d), default=None)
    ET.SubElement(feed, a + "updated").text = _iso(newest, clock)
    for cp, d in zip(regs, updated, strict=False):
        e = ET.SubElement(feed, a + "entry")
        state = "open" if cp.open and not cp.acknowledged else "past"
        pct = format_delta_pct(cp.ratio)
        ET.SubElement(e, a + "title").text = xml_text(
            f"[{state}] {pct} {cp.series.label} on {cp.machine}"
        )
        ET.SubElement(e, a + "id").text = change_point_id(cp)
        ET.SubElement(e, a + "updated").text = _iso(d, clock)
        ET.SubElement(e, a + "link", rel="alternate", href=page_url(cp) or site_url)
        summary = cp.reason or pct
        summary += f" — culprit in {cp.commit_before[:12]}..{cp.commit_after[:12]}"
        found = culprit_plain(cp.culprit) if cp.culprit is not None else ""
        if found:  # what a bisection proved: the commit, its subject, PR and cause
            summary += f"; {found}"
        if cp.acknowledged:
            summary += f"; acknowledged: {cp.acknowledged}"
        ET.SubElement(e, a + "summary").text = xml_text(summary)
        ET.SubElement(e, a + "category", term=state)
    body: bytes = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return body
