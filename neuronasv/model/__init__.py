"""Frozen, versioned data types that flow between the stages.

measure -> ``profile`` -> store (asv results + ``sidecar``) -> ``history`` -> analyse ->
``findings`` -> report / publish.
"""

from __future__ import annotations

from neuronasv.model.findings import (
    FINDINGS_SCHEMA_VERSION,
    Cause,
    ChangePoint,
    EnvChange,
    Estimate,
    Finding,
    FindingsDocument,
    OpContribution,
    RowState,
    RunRef,
    SeriesId,
    WorkChange,
)
from neuronasv.model.history import History, Point, Series
from neuronasv.model.profile import (
    PROFILE_SCHEMA_VERSION,
    CanaryReading,
    ModuleProfile,
    OpProfile,
    ProfileDocument,
    WorkloadProfile,
)
from neuronasv.model.sidecar import SIDECAR_SCHEMA_VERSION, RunSidecar

__all__ = [
    "FINDINGS_SCHEMA_VERSION",
    "PROFILE_SCHEMA_VERSION",
    "SIDECAR_SCHEMA_VERSION",
    "CanaryReading",
    "Cause",
    "ChangePoint",
    "EnvChange",
    "Estimate",
    "Finding",
    "FindingsDocument",
    "History",
    "ModuleProfile",
    "OpContribution",
    "OpProfile",
    "Point",
    "ProfileDocument",
    "RowState",
    "RunRef",
    "RunSidecar",
    "Series",
    "SeriesId",
    "WorkChange",
    "WorkloadProfile",
]
