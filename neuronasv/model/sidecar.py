"""What ``neuronasv run`` stores next to each asv results file (the Store stage).

asv's results file holds the series asv knows; the sidecar next to it (named by
:func:`neuronasv.store.layout.sidecar_path`) holds what asv cannot: the environment
fingerprint, the full op tables (ops that only exist in this commit included), the map from
asv series to (workload, shape, dtype, op), trace locations and the canary.

Schema history (``SIDECAR_SCHEMA_VERSION``):
  1 — first version.
  2 — ``state`` (:class:`RunState`): the machine's state at the start and the end of the
      commit's run (load averages, CPU clock), so a comparison can say what the runner was
      doing when every series moved together (issue 39). Version 1 sidecars are read (no
      state).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from neuronasv.model._codec import Document, Model, spec
from neuronasv.model.findings import SeriesId
from neuronasv.model.profile import WorkloadProfile

__all__ = ["SIDECAR_SCHEMA_VERSION", "MachineReading", "RunSidecar", "RunState"]

SIDECAR_SCHEMA_VERSION = 2
_KIND = "neuronasv.run"


@dataclass(frozen=True)
class MachineReading(Model):
    """The host at one moment of a run (:func:`neuronasv.measure.device_state.host_reading`).

    Attributes:
        load_1m, load_5m, load_15m: the load averages (``/proc/loadavg``); None when
            unreadable.
        cpu_mhz: the CPUs' mean current clock (cpufreq, else ``/proc/cpuinfo``); None
            when unreadable.
        cpus: online CPUs (0 when unknown).
    """

    _what = "machine reading"

    load_1m: float | None = field(default=None, metadata=spec(bound="nonneg"))
    load_5m: float | None = field(default=None, metadata=spec(bound="nonneg"))
    load_15m: float | None = field(default=None, metadata=spec(bound="nonneg"))
    cpu_mhz: float | None = field(default=None, metadata=spec(bound="nonneg"))
    cpus: int = field(default=0, metadata=spec(bound="nonneg"))


@dataclass(frozen=True)
class RunState(Model):
    """The machine at the start (before the pre-pass) and at the end (after asv) of one
    commit's run."""

    _what = "run state"

    start: MachineReading = field(default_factory=MachineReading)
    end: MachineReading = field(default_factory=MachineReading)


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
        state: the machine's load and clock at the start and end of the run (schema 2).
    """

    _kind = _KIND
    _version = SIDECAR_SCHEMA_VERSION
    _readable = (1, SIDECAR_SCHEMA_VERSION)
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
    state: RunState | None = field(default=None, metadata=spec(omit_empty=True))
