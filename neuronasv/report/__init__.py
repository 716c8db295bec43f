"""Report: findings document → PR comment, job summary, annotations, terminal view.

Pure text renderers (no I/O apart from :func:`append_summary`); untrusted text is escaped
by :mod:`neuronasv.report.escape`. The GitHub side lives in :mod:`neuronasv.github`.
"""

from __future__ import annotations

from neuronasv.report.annotations import render_annotations
from neuronasv.report.digest import Digest, digest
from neuronasv.report.markdown import (
    COMMENT_MAX_CHARS,
    MARKER,
    comment_marker,
    render_comment,
    render_comment_trimmed,
    render_markdown,
)
from neuronasv.report.summary import append_summary, render_summary
from neuronasv.report.terminal import render_terminal, terminal_text

__all__ = [
    "COMMENT_MAX_CHARS",
    "MARKER",
    "Digest",
    "append_summary",
    "comment_marker",
    "digest",
    "render_annotations",
    "render_comment",
    "render_comment_trimmed",
    "render_markdown",
    "render_summary",
    "render_terminal",
    "terminal_text",
]
