"""What ``neuronasv run`` stores next to each asv results file (the Store stage).

asv's results file holds the series asv knows; the sidecar next to it (named by
:func:`neuronasv.store.layout.sidecar_path`) holds what asv cannot: the environment
fingerprint, the full op tables (ops that only exist in this commit included), the map from
asv series to (workload, shape, dtype, op), trace locations and the canary.

Schema history (``SIDECAR_SCHEMA_VERSION``):
  1 — first version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neuronasv.model._codec import Document
from neuronasv.model.findings import SeriesId
from neuronasv.model.profile import WorkloadProfile

__all__ = ["SIDECAR_SCHEMA_VERSION", "RunSidecar"]

SIDECAR_SCHEMA_VERSION = 1
_KIND = "neuronasv.run"


@dataclass(frozen=True)
class RunSidecar(Document):
    """Environment and full op tables of one (machine, commit, environment) run.

    Attributes:
        machine: asv machine name.
        commit_hash: full 40-hex commit the code was checked out at.
        env_name: asv environment name (the results file's suffix).
        fingerprint: environment fingerprint (python, torch, torch_neuronx, neuronx_cc,
            cuda, driver, device_model, cpu_model, backend, ...).
        profiles: every profiled workload with its full op table.
        series: asv series -> neuronasv identity, so analysis never parses names.
        traces: workload key -> trace path relative to the trace store.
        failures: workload key -> error text for workloads that failed in this commit.
    """

    _kind = _KIND
    _version = SIDECAR_SCHEMA_VERSION
    _readable = (SIDECAR_SCHEMA_VERSION,)
    _source = "<sidecar>"

    machine: str
    commit_hash: str
    env_name: str
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    profiles: tuple[WorkloadProfile, ...] = ()
    series: tuple[SeriesId, ...] = ()
    traces: Mapping[str, str] = field(default_factory=dict)
    failures: Mapping[str, str] = field(default_factory=dict)
    created: str = ""
