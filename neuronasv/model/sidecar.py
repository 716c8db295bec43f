"""What ``neuronasv run`` stores next to each asv results file (the Store stage).

asv's results file ``<results>/<machine>/<hash8>-<env>.json`` holds the series asv knows;
the sidecar ``<results>/<machine>/<hash8>-<env>.neuronasv`` (not ``.json``, so asv's
``iter_results`` skips it) holds what asv cannot: the environment fingerprint, the full op
tables (ops that only exist in this commit included), the map from asv series to
(workload, shape, dtype, op), trace locations and the canary.

Schema history (``SIDECAR_SCHEMA_VERSION``):
  1 — first version.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from neuronasv.model._codec import Document
from neuronasv.model.findings import SeriesId
from neuronasv.model.profile import WorkloadProfile

__all__ = ["SIDECAR_SCHEMA_VERSION", "SIDECAR_SUFFIX", "RunSidecar", "sidecar_path"]

SIDECAR_SCHEMA_VERSION = 1
SIDECAR_SUFFIX = ".neuronasv"
_KIND = "neuronasv.run"


def sidecar_path(asv_result_file: str | os.PathLike[str]) -> str:
    """``.../abcd1234-existing-py.json`` -> ``.../abcd1234-existing-py.neuronasv``."""
    path = os.fspath(asv_result_file)
    stem = path[: -len(".json")] if path.endswith(".json") else path
    return stem + SIDECAR_SUFFIX


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
