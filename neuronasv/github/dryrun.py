"""Dry runs: write exactly the requests a command would send, as JSON, without sending.

Used by ``neuronasv comment|status --dry-run`` and whenever ``GITHUB_TOKEN`` is unset.
The document lists each request's method, API path (relative to ``GITHUB_API_URL``) and
JSON body; no headers, so no token.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["dry_run_text"]  # writing: neuronasv.commands.args.write_output


def dry_run_text(requests: Sequence[dict[str, Any]], *, api_url: str, reason: str) -> str:
    """The dry-run document (deterministic JSON)."""
    doc = {"dry_run": True, "reason": reason, "api_url": api_url, "requests": list(requests)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
