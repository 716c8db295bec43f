"""Exact work evidence: what each op was asked to do, independent of how long it took.

The timed profile says how long each op ran, with noise. A second, untimed pass with
``record_shapes=True`` says what each op was asked to do, *exactly*: how many calls per
iteration, with which input shapes and dtypes. Identical code gives identical evidence on
every run and every machine of a backend, so a difference between base and head is a
certain change of work ("one more ``aten::mul``", "``aten::add`` now reads every element"),
no statistics needed (:mod:`neuronasv.analyse.evidence` compares them).

The same pass feeds the roofline's FLOP/byte estimates (:mod:`neuronasv.measure.roofline`),
so one extra step of the workload buys both.

A call's *signature* is its tensor inputs as ``dtype[d0,d1,...]`` joined by ``, ``
(non-tensor arguments — Python scalars, lists, ``None`` — are left out: they change no
shape of the work). An op's signature is the sorted list of ``"<calls per iteration>×
<call signature>"`` over its distinct call signatures, e.g. ``("2×bf16[4,512], bf16[4,512]",
"1×bf16[4,512], bf16[512]")``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from neuronasv.dtypes import short_name as short_dtype_name
from neuronasv.errors import UsageError
from neuronasv.measure.modules import module_of
from neuronasv.model.profile import WorkloadProfile

if TYPE_CHECKING:
    from neuronasv.measure.peaks import Peak

__all__ = [
    "WorkCapture",
    "annotate_workload",
    "call_signature",
    "capture_work",
    "module_signatures_from_events",
    "signatures_from_events",
]

# Profiler input types that are not tensors (scalars, lists, absent optionals).
_NON_TENSOR = frozenset({"", "Scalar", "ScalarList", "TensorList", "GenericList", "None"})


def call_signature(shapes: Sequence[Any] | None, dtypes: Sequence[Any] | None) -> str:
    """``bf16[4,1], bf16[4,512]`` from one event's ``input_shapes``/``input_dtypes``.

    Entries whose type is not a tensor are dropped; a 0-d tensor reads ``fp32[]``.
    """
    shapes = list(shapes or [])
    dtypes = list(dtypes or [])
    parts: list[str] = []
    for i, shp in enumerate(shapes):
        dt = str(dtypes[i]) if i < len(dtypes) else ""
        if dt in _NON_TENSOR:
            continue
        dims = ",".join(str(int(d)) for d in shp) if isinstance(shp, (list, tuple)) else ""
        parts.append(f"{short_dtype_name(dt)}[{dims}]")
    return ", ".join(parts)


def _per_iter(count: int, iterations: int) -> str:
    v = count / iterations
    return f"{v:g}" if v == int(v) else f"{v:.3g}"


def signatures_from_events(
    events: Iterable[Any], iterations: int, *, op_name: Callable[[Any], str]
) -> dict[str, tuple[str, ...]]:
    """Per op, the sorted ``"<calls per iteration>×<call signature>"`` entries.

    Args:
        events: host-side ``FunctionEvent`` objects captured with ``record_shapes=True``.
        iterations: iterations the events span (counts are divided by it).
        op_name: the op identity used in the profile.
    """
    return {
        op: by_module[""]
        for op, by_module in _count(events, iterations, op_name, lambda e: "").items()
    }


def module_signatures_from_events(
    events: Iterable[Any], iterations: int, *, op_name: Callable[[Any], str]
) -> dict[str, dict[str, tuple[str, ...]]]:
    """Per op, per module path that issued its calls (:func:`neuronasv.measure.modules.
    module_of`; ``""`` outside any scope), the signature entries of those calls: where a
    change of work happened, as exactly as what it was."""
    return _count(events, iterations, op_name, module_of)


def _count(
    events: Iterable[Any],
    iterations: int,
    op_name: Callable[[Any], str],
    where: Callable[[Any], str],
) -> dict[str, dict[str, tuple[str, ...]]]:
    if iterations <= 0:
        raise UsageError(f"iterations must be positive, got {iterations}")
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for e in events:
        sig = call_signature(getattr(e, "input_shapes", None), getattr(e, "input_dtypes", None))
        bucket = counts.setdefault(op_name(e), {}).setdefault(where(e), {})
        bucket[sig] = bucket.get(sig, 0) + 1
    return {
        op: {
            path: tuple(sorted(f"{_per_iter(n, iterations)}×{sig}" for sig, n in sigs.items()))
            for path, sigs in paths.items()
        }
        for op, paths in counts.items()
    }


@dataclass(frozen=True)
class WorkCapture:
    """What one untimed pass found: per-op costs (roofline) and call signatures."""

    costs: dict[str, Any]  # op -> roofline.OpCost
    signatures: dict[str, tuple[str, ...]]
    # op -> module path -> signature entries; only when the workload opened module scopes
    modules: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)


def capture_work(
    step: Callable[[], object],
    *,
    iterations: int = 1,
    default_dtype: Any = "float32",
    synchronize: Callable[[], None] | None = None,
    assume_causal: bool = False,
) -> WorkCapture:
    """Run ``step`` under a host-only profiler with shapes and FLOPs; return the work.

    A separate pass from the timed profile on purpose: ``record_shapes`` and
    ``with_flops`` add host overhead that must not land in the measured times. The step
    should be warmed up already (compiled workloads compile on their first calls). Runs
    under ``torch.no_grad()`` like the timed loop, so the same ops run. Op names are
    normalised as in :func:`neuronasv.measure.profiling.normalize_op_name`.
    ``assume_causal``: see :func:`neuronasv.measure.roofline.op_cost`.
    """
    import torch
    from torch.profiler import ProfilerActivity

    from neuronasv.measure.opnames import (
        is_bookkeeping,
        is_host_event,
        normalize_op_name,
        quiet_kineto_stderr,
    )
    from neuronasv.measure.roofline import costs_from_events
    from neuronasv.measure.torchprof import profile

    with quiet_kineto_stderr(), profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True
    ) as prof, torch.no_grad():
        for _ in range(iterations):
            step()
        if synchronize is not None:
            synchronize()
    with quiet_kineto_stderr():
        events = [e for e in prof.events() if not is_bookkeeping(e.name)]

    def name(e: Any) -> str:
        return normalize_op_name(e.key)

    host = [e for e in events if is_host_event(e)]
    modules = module_signatures_from_events(host, iterations, op_name=name)
    scoped = any(set(paths) != {""} for paths in modules.values())
    return WorkCapture(
        costs=costs_from_events(
            events, iterations, default_dtype=default_dtype, op_name=name,
            assume_causal=assume_causal,
        ),
        signatures=signatures_from_events(host, iterations, op_name=name),
        modules=modules if scoped else {},
    )


def annotate_workload(
    profile: WorkloadProfile,
    workload: Any,
    backend: Any,
    *,
    seed: int = 0,
    peak: Peak | None = None,
    fingerprint: Mapping[str, str] | None = None,
    step: Callable[[], object] | None = None,
    fractions: bool = True,
) -> WorkloadProfile:
    """Add the work of a finished profile of ``workload`` on ``backend``.

    One separate untimed pass (:func:`capture_work`) — with the
    profile's own ``step`` when given (already warm), else a fresh build at the profile's
    shape and dtype, warmed up first — gives every op its call signatures (exact work
    evidence) and ``flops``/``bytes``; with ``fractions`` the ``roofline_fraction``
    against ``peak`` (default :func:`~neuronasv.measure.backends.peak_for` the backend and
    its fingerprint) too. (Here, not in ``roofline``: the roofline's cost formulas are
    used by this pass, so the pass that runs them sits above them.)
    """
    from neuronasv.measure.backends import peak_for
    from neuronasv.measure.fractions import annotate
    from neuronasv.measure.workloads import parse_dtype, parse_shape

    if step is None:
        step = workload.build(
            parse_shape(profile.shape), parse_dtype(profile.dtype), backend.device, seed
        )
        for _ in range(2):  # compiled workloads compile on their first calls
            step()
        backend.synchronize()
    from neuronasv.measure.roofline import CAUSAL_TAG

    work = capture_work(
        step,
        default_dtype=profile.dtype,
        synchronize=backend.synchronize,
        assume_causal=CAUSAL_TAG in tuple(getattr(workload, "tags", ()) or ()),
    )
    if fractions and peak is None:
        if fingerprint is None and not backend.roof_is_calibrated:
            from neuronasv.measure.fingerprint import collect_fingerprint

            fingerprint = collect_fingerprint(backend)
        peak = peak_for(backend, fingerprint)
    annotated = annotate(profile, work.costs, peak if fractions else None)
    return replace(
        annotated,
        ops=tuple(
            replace(
                op,
                signature=work.signatures.get(op.op, ()),
                module_signatures=work.modules.get(op.op, {}),
            )
            for op in annotated.ops
        ),
    )
