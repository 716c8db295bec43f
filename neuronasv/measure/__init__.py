"""Measure: run workloads under the torch profiler and read device time per op.

- :mod:`~neuronasv.measure.backends` — ``cpu``, ``cuda``, ``neuron``; :func:`get_backend`.
- :mod:`~neuronasv.measure.workloads` — the :class:`Workload` registry (RMSNorm variants).
- :mod:`~neuronasv.measure.profiling` — :func:`profile_workload` (how: :class:`ProfileOptions`)
  -> ``WorkloadProfile``.
- :mod:`~neuronasv.measure.fingerprint` — :func:`collect_fingerprint`.

Importing this package imports torch lazily only where needed; torch_neuronx is imported
only when the neuron backend is asked whether it is available.
"""

from __future__ import annotations

from neuronasv.measure.backends import Backend, available_backends, get_backend
from neuronasv.measure.fingerprint import collect_fingerprint
from neuronasv.measure.profiling import ProfileOptions, op_input_shapes, profile_workload
from neuronasv.measure.workloads import Workload, parse_dtype, parse_shape

__all__ = [
    "Backend",
    "ProfileOptions",
    "Workload",
    "available_backends",
    "collect_fingerprint",
    "get_backend",
    "op_input_shapes",
    "parse_dtype",
    "parse_shape",
    "profile_workload",
]
