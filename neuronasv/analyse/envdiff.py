"""What changed in the environment between two runs: fingerprint keys whose value differs.

Used by the pairwise comparison (base vs head) and by change-point detection (the commits
either side of a step); it sits below both so that neither imports the other for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from neuronasv.model import EnvChange

__all__ = ["env_changes"]


def env_changes(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[EnvChange, ...]:
    """Fingerprint keys whose value differs (sorted by key)."""
    keys = sorted(set(before) | set(after))
    return tuple(
        EnvChange(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)
    )
