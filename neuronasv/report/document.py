"""A findings document in the output format a command was asked for (``--format``).

``compare`` and ``confirm`` print the same three forms: ``text`` (the verdict table),
``json`` (the document itself, what comment/status/summary/confirm read) and ``markdown``
(a compare document's table; other modes have no markdown form and print their JSON).
"""

from __future__ import annotations

from neuronasv.model import FindingsDocument
from neuronasv.report.tables import compare_markdown, compare_text

__all__ = ["FORMATS", "render_document", "renders_json"]

#: The ``--format`` choices of ``compare`` and ``confirm``.
FORMATS: tuple[str, ...] = ("text", "json", "markdown")


def renders_json(doc: FindingsDocument, fmt: str) -> bool:
    """Whether :func:`render_document` gives ``doc`` as ``fmt`` in JSON."""
    return fmt == "json" or (fmt == "markdown" and doc.mode != "compare")


def render_document(doc: FindingsDocument, fmt: str) -> str:
    """``doc`` as ``fmt`` (one of :data:`FORMATS`)."""
    if renders_json(doc, fmt):
        return doc.dumps()
    if fmt == "markdown":
        return compare_markdown(doc)
    return compare_text(doc)
