"""The job summary: markdown for ``$GITHUB_STEP_SUMMARY`` (GitHub caps it at 1 MiB per step).

Same content and order as the PR comment (it is the "full report" the comment links to),
without the hidden marker, and with a budget in bytes rather than characters.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from neuronasv.model.findings import FindingsDocument
from neuronasv.report.markdown import render_markdown

__all__ = ["SUMMARY_MAX_BYTES", "append_summary", "render_summary"]

#: GitHub's limit for one step's summary is 1 MiB; keep a margin for other writers.
SUMMARY_MAX_BYTES = 1024 * 1024 - 16 * 1024


def render_summary(
    doc: FindingsDocument,
    *,
    history: Mapping[str, Sequence[float]] | None = None,
    report_url: str | None = None,
    max_bytes: int = SUMMARY_MAX_BYTES,
) -> str:
    """Render the job summary; at most ``max_bytes`` bytes of UTF-8.

    Args:
        doc: the findings document.
        history: optional ``{series label: values}`` for the worst series' chart.
        report_url: where the untrimmed report lives (used only if trimming happens).
        max_bytes: byte budget.
    """
    budget = max_bytes
    for _ in range(6):
        text = render_markdown(doc, history=history, max_chars=budget, report_url=report_url)
        size = len(text.encode("utf-8"))
        if size <= max_bytes:
            return text
        # Multi-byte characters (µ, →, …) make bytes exceed characters: shrink and retry.
        budget = max(1000, int(budget * max_bytes / size) - 64)
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def append_summary(text: str, path: str | os.PathLike[str] | None = None) -> Path | None:
    """Append ``text`` to ``path`` or ``$GITHUB_STEP_SUMMARY``; None when neither is set."""
    target = path or os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    out = Path(target)
    with out.open("a", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")
    return out
