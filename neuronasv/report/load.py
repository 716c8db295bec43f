"""Reading a findings document (and optional history values) for the report commands.

Errors name the file: a missing file is a :class:`~neuronasv.errors.UsageError`, a
truncated or malformed one a :class:`~neuronasv.errors.CorruptResultsError`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from neuronasv.errors import CorruptResultsError, UsageError
from neuronasv.model.findings import FindingsDocument

__all__ = ["load_findings", "load_history_values"]


def _read(path: str | Path, what: str) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} {p} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptResultsError(f"{p}: cannot read {what} ({exc})") from None


def load_findings(path: str | Path) -> FindingsDocument:
    """Load a findings document written by ``neuronasv compare``/``regressions``."""
    return FindingsDocument.loads(_read(path, "findings document"), source=str(path))


def load_history_values(path: str | Path) -> dict[str, list[float]]:
    """Load ``{series label: [values oldest → newest]}`` for the comment's chart."""
    text = _read(path, "history values file")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CorruptResultsError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptResultsError(f"{path}: expected an object of label -> list of numbers")
    out: dict[str, list[float]] = {}
    for label, values in data.items():
        if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        ):
            raise CorruptResultsError(f"{path}: {label!r} must be a list of finite numbers")
        out[str(label)] = [float(v) for v in values]
    return out
