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
from typing import Any

from neuronasv.errors import CorruptResultsError
from neuronasv.model import _codec
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
class RunSidecar:
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

    machine: str
    commit_hash: str
    env_name: str
    fingerprint: Mapping[str, str] = field(default_factory=dict)
    profiles: tuple[WorkloadProfile, ...] = ()
    series: tuple[SeriesId, ...] = ()
    traces: Mapping[str, str] = field(default_factory=dict)
    failures: Mapping[str, str] = field(default_factory=dict)
    created: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": _KIND,
            "schema_version": SIDECAR_SCHEMA_VERSION,
            "machine": self.machine,
            "commit_hash": self.commit_hash,
            "env_name": self.env_name,
            "created": self.created,
            "fingerprint": dict(self.fingerprint),
            "profiles": [p.to_json() for p in self.profiles],
            "series": [s.to_json() for s in self.series],
            "traces": dict(self.traces),
            "failures": dict(self.failures),
        }

    def dumps(self) -> str:
        return _codec.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: Any, source: str = "<sidecar>") -> RunSidecar:
        doc = _codec.check_schema(
            data, kind=_KIND, supported=(SIDECAR_SCHEMA_VERSION,), source=source
        )
        for name in ("fingerprint", "traces", "failures"):
            if not isinstance(doc.get(name, {}), Mapping):
                raise CorruptResultsError(f"{source}: {name} must be an object")
        return cls(
            machine=_codec.field(doc, "machine", str, source),
            commit_hash=_codec.field(doc, "commit_hash", str, source),
            env_name=_codec.field(doc, "env_name", str, source),
            created=_codec.text_field(doc, "created", source),
            fingerprint=_codec.str_map(doc, "fingerprint", source),
            profiles=tuple(
                WorkloadProfile.from_json(p, source)
                for p in _codec.list_field(doc, "profiles", source)
            ),
            series=tuple(
                SeriesId.from_json(s, source) for s in _codec.list_field(doc, "series", source)
            ),
            traces=_codec.str_map(doc, "traces", source),
            failures=_codec.str_map(doc, "failures", source),
        )

    @classmethod
    def loads(cls, text: str, source: str = "<sidecar>") -> RunSidecar:
        return cls.from_json(_codec.loads(text, source=source), source)
