"""Run a workload under ``torch.profiler`` and turn ``key_averages()`` into device time.

One *sample* is one profiler cycle of the seed's schedule — ``wait=2, warmup=1,
active=K`` — repeated N times; ``on_trace_ready`` fires once per cycle with only that
cycle's events, and each sample is that cycle's time divided by its K active iterations
(so every figure is "per iteration"). The device is synchronised before every
``prof.step()`` so the tracer never closes a cycle while work is still queued.

How device time is read (all µs, from ``key_averages()`` entries):

- **Per op** = the entry's ``self_device_time_total`` (self, so nested ops never count
  twice: ``aten::linear`` does not also own its ``aten::addmm`` kernel), over host-side
  (``DeviceType.CPU``) entries, which carry the kernels they launched. Profiler bookkeeping
  (``ProfilerStep*``, ``profiler::*``, ``[memory]``) is not an op.
- **Per workload** = the sum of the op rows. Kernels that no kept op launched (e.g. from
  inside ``ProfilerStep*`` itself) go to one extra row, :data:`UNATTRIBUTED_OP`, so the rows
  still add up to torch's own device total (device-type, non-annotation entries plus
  legacy host entries: the rule of ``EventList.table``).
- **CPU backend**: there is no device clock; "device time" is each op's
  ``self_cpu_time_total`` and the result says ``device_time_is_cpu=True``. Its cycles are
  host-only: :func:`read_cycle` takes the same rows and event tree from the Kineto events
  directly (:func:`neuronasv.measure.torchprof.host_cycle`, bit-identical, a fraction of
  torch's ``FunctionEvent`` parse), and reads every other cycle through torch.

An accelerator sample with zero device time, or a cycle with no events, is a failed
capture and raises :class:`neuronasv.errors.CaptureError` naming the workload — never a
result that looks like a speed-up.

Op names are normalised (:func:`normalize_op_name`) so compiled graphs keep one identity
across runs and commits (``## Call CompiledFxGraph <hash> ##`` -> ``## Call
CompiledFxGraph``).

Kineto prints ``USDT ... profiler_start/stop`` lines on file descriptor 2 at every cycle;
:func:`quiet_kineto_stderr` captures fd 2 around profiler start/step/stop and passes on
everything except those lines, so real errors still reach the user.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from neuronasv.errors import BackendUnavailable, CaptureError, UsageError
from neuronasv.fileio import atomic_open
from neuronasv.format import format_pct
from neuronasv.measure.backends.base import Backend
from neuronasv.measure.modules import ROOT, ancestors, inclusive, rollup_events
from neuronasv.measure.opnames import (
    BOOKKEEPING_PREFIXES,
    UNATTRIBUTED_OP,
    CycleStats,
    OpSample,
    is_bookkeeping,
    is_host_event,
    normalize_op_name,
    quiet_kineto_stderr,
)
from neuronasv.measure.steps import split_steps
from neuronasv.measure.workloads import Workload, dtype_name, parse_dtype, parse_shape, shape_label
from neuronasv.model.profile import ModuleProfile, OpProfile, WorkloadProfile
from neuronasv.samples import NOISE_THRESHOLD, median, noise

log = logging.getLogger(__name__)

__all__ = [
    "BOOKKEEPING_PREFIXES",
    "UNATTRIBUTED_OP",
    "CycleStats",
    "OpSample",
    "ProfileOptions",
    "ProfiledConfig",
    "extract_cycle",
    "gzip_trace",
    "is_bookkeeping",
    "module_profiles",
    "normalize_op_name",
    "op_input_shapes",
    "profile_workload",
    "quiet_kineto_stderr",
    "read_cycle",
    "summarize_cycles",
    "trace_file_stem",
]

# Below this, device time that no op claims is rounding, not a kernel.
_UNATTRIBUTED_EPS_US = 1e-3

_WAIT = 2
_WARMUP = 1

_CYCLE_WARNING = ".*Profiler clears events at the end of each cycle"


def extract_cycle(events: Iterable[Any], *, device_time_is_cpu: bool) -> CycleStats:
    """Turn one cycle's ``key_averages()`` into per-op totals.

    Args:
        events: ``FunctionEventAvg`` entries (or ``FunctionEvent``: anything with ``key``,
            ``count``, ``self_cpu_time_total``, ``self_device_time_total``,
            ``device_type``).
        device_time_is_cpu: read self CPU time as device time (CPU backend).
    """
    ops: dict[str, list[float]] = {}
    torch_device_total = 0.0
    for entry in events:
        key = str(entry.key)
        self_cpu = float(entry.self_cpu_time_total or 0.0)
        self_dev = float(entry.self_device_time_total or 0.0)
        if not is_host_event(entry):
            # A kernel row: the same time is already on the host op that launched it.
            if not getattr(entry, "is_user_annotation", False):
                torch_device_total += self_dev
            continue
        if getattr(entry, "is_legacy", False):
            torch_device_total += self_dev
        if is_bookkeeping(key):
            continue
        name = normalize_op_name(key)
        acc = ops.setdefault(name, [0.0, 0.0, 0.0])
        acc[0] += self_cpu if device_time_is_cpu else self_dev
        acc[1] += self_cpu
        acc[2] += int(entry.count)
    samples = {
        name: OpSample(self_device_us=v[0], self_cpu_us=v[1], count=int(v[2]))
        for name, v in ops.items()
    }
    attributed = sum(s.self_device_us for s in samples.values())
    if not device_time_is_cpu and torch_device_total - attributed > _UNATTRIBUTED_EPS_US:
        samples[UNATTRIBUTED_OP] = OpSample(
            self_device_us=torch_device_total - attributed, self_cpu_us=0.0, count=0
        )
        attributed = torch_device_total
    return CycleStats(ops=samples, device_time_us=attributed)


def _median(values: Sequence[float]) -> float:
    return median(values) if values else 0.0


def _check_cycles(
    where: str, cycles: Sequence[CycleStats], *, device_time_is_cpu: bool, hint: str | None
) -> None:
    """Refuse an empty capture: no cycles, a cycle without events, or one without time."""
    if not cycles:
        raise CaptureError(f"{where}: the profiler delivered no samples (empty capture)")
    for i, cycle in enumerate(cycles, 1):
        if not cycle.ops:
            raise CaptureError(
                f"{where}: sample {i} of {len(cycles)} captured no events (empty capture)",
                hint=hint,
            )
        if cycle.device_time_us <= 0:
            what = "self CPU time" if device_time_is_cpu else "device time"
            raise CaptureError(
                f"{where}: sample {i} of {len(cycles)} recorded no {what}; zero device time"
                " is a failed capture, not a speed-up",
                hint=hint,
            )


def _op_profiles(
    cycles: Sequence[CycleStats], *, active: int, device_time_is_cpu: bool
) -> list[OpProfile]:
    """One :class:`OpProfile` per op seen in any cycle (per iteration), heaviest first;
    on an accelerator, host-only rows (runtime calls, allocations) are left out."""
    n = len(cycles)
    names: list[str] = []
    for cycle in cycles:
        names.extend(op for op in cycle.ops if op not in names)
    ops: list[OpProfile] = []
    for op in names:
        dev = tuple(c.ops[op].self_device_us / active if op in c.ops else 0.0 for c in cycles)
        cpu = tuple(c.ops[op].self_cpu_us / active if op in c.ops else 0.0 for c in cycles)
        if not device_time_is_cpu and not any(dev):
            continue  # host-only rows (runtime calls, allocations) have no device time
        count = sum(c.ops[op].count for c in cycles if op in c.ops)
        ops.append(
            OpProfile(
                op=op,
                calls_per_iter=count / (n * active),
                self_device_time_us=dev,
                self_cpu_time_us=cpu,
                device_time_source=_joined(c.sources.get(op) for c in cycles),
            )
        )
    ops.sort(key=lambda o: (-sum(o.self_device_time_us), o.op))
    return ops


def _joined(sources: Iterable[str | None]) -> str | None:
    """Distinct sources in order of first appearance, `` + ``-joined (None: none named)."""
    seen = list(dict.fromkeys(x for x in sources if x))
    return " + ".join(seen) if seen else None


def _noise_warnings(totals: Sequence[float], ops: Sequence[OpProfile]) -> list[str]:
    """The noise warnings of a profile: the total's spread, and that of each op holding at
    least 5 % of the total."""
    n = len(totals)
    warnings_out: list[str] = []
    total_spread = noise(totals) or 0.0
    if total_spread > NOISE_THRESHOLD:
        warnings_out.append(
            f"noisy: device time IQR/median = {format_pct(total_spread)}"
            f" > {format_pct(NOISE_THRESHOLD)}"
            f" over {n} samples (more --samples or --active iterations per sample help)"
        )
    total_median = _median(totals)
    noisy_ops = []
    for o in ops:
        share = _median(o.self_device_time_us) / total_median if total_median else 0.0
        op_spread = noise(o.self_device_time_us) or 0.0
        if share >= 0.05 and op_spread > NOISE_THRESHOLD:
            noisy_ops.append(f"{o.op} {format_pct(op_spread)}")
    if noisy_ops:
        warnings_out.append(
            f"noisy ops (IQR/median > {format_pct(NOISE_THRESHOLD)}): " + ", ".join(noisy_ops)
        )
    return warnings_out


@dataclasses.dataclass(frozen=True)
class ProfiledConfig:
    """Which workload configuration a profile measured.

    Attributes:
        name: the workload's name.
        backend: the backend's name.
        shape, dtype: the configuration as text (``4x512``, ``bfloat16``).
    """

    name: str
    backend: str
    shape: str
    dtype: str


def summarize_cycles(
    config: ProfiledConfig,
    cycles: Sequence[CycleStats],
    *,
    active: int,
    device_time_is_cpu: bool,
    trace_files: Sequence[str] = (),
    capture_hint: str | None = None,
) -> WorkloadProfile:
    """Build the :class:`WorkloadProfile` from per-cycle stats (pure).

    Raises:
        CaptureError: no cycles, a cycle without events, or (on an accelerator) a sample
            with zero device time.
    """
    name, backend, shape, dtype = config.name, config.backend, config.shape, config.dtype
    where = f"{name} [{shape},{dtype}] on {backend}"
    _check_cycles(where, cycles, device_time_is_cpu=device_time_is_cpu, hint=capture_hint)
    totals = tuple(c.device_time_us / active for c in cycles)
    ops = _op_profiles(cycles, active=active, device_time_is_cpu=device_time_is_cpu)
    modules, ops = module_profiles(cycles, ops, active=active)
    warnings_out = _noise_warnings(totals, ops)
    return WorkloadProfile(
        name=name,
        backend=backend,
        shape=shape,
        dtype=dtype,
        device_time_us=totals,
        ops=tuple(ops),
        device_time_is_cpu=device_time_is_cpu,
        iterations_per_sample=active,
        warnings=tuple(warnings_out),
        trace_files=tuple(trace_files),
        modules=modules,
        device_time_source=_joined(src for c in cycles for src in c.sources.values()),
    )


_STEM_MAX = 120


def module_profiles(
    cycles: Sequence[CycleStats], ops: Sequence[OpProfile], *, active: int
) -> tuple[tuple[ModuleProfile, ...], list[OpProfile]]:
    """Module rollup of ``cycles`` (pure): per path, inclusive and self time per sample
    (per iteration), and ``ops`` with their per-module shares filled in.

    Empty (and ``ops`` unchanged) when no cycle saw a module scope: a workload without
    scopes keeps the profile it had before the rollup existed.
    """
    rolled = [c.modules for c in cycles if c.modules is not None]
    if len(rolled) != len(cycles) or not any(set(m.self_us) - {ROOT} for m in rolled):
        return (), list(ops)
    paths: set[str] = set()
    for m in rolled:
        for p in m.self_us:
            paths.update(ancestors(p))
    # Root first, then depth-first in name order (block, block.attn, block.mlp, ...).
    order = sorted(paths, key=lambda p: (p != ROOT, p.split(".")))
    incl = [inclusive(m.self_us) for m in rolled]
    modules = tuple(
        ModuleProfile(
            path=p,
            device_time_us=tuple(i.get(p, 0.0) / active for i in incl),
            self_device_time_us=tuple(m.self_us.get(p, 0.0) / active for m in rolled),
        )
        for p in order
    )
    per_op: dict[str, dict[str, float]] = {}
    for m in rolled:
        for (path, op), t in m.op_us.items():
            acc = per_op.setdefault(op, {})
            acc[path] = acc.get(path, 0.0) + t
    out = []
    for o in ops:
        by_path = per_op.get(o.op, {})
        total = sum(by_path.values())
        shares = (
            {p: round(t / total, 6) for p, t in sorted(by_path.items()) if t > 0}
            if total > 0
            else {}
        )
        out.append(dataclasses.replace(o, modules=shares) if shares else o)
    return modules, out


def trace_file_stem(name: str, shape: str, dtype: str) -> str:
    """File-system-safe stem for one workload's trace files (``rmsnorm.naive-4x512-bfloat16``).

    Anything outside ``A-Za-z0-9_.-`` becomes ``_``; no leading ``.`` or ``-`` (no hidden
    file, which ``actions/upload-artifact`` would leave out, no option-like name); at most
    120 characters (a longer one keeps its first 100 and a hash of the whole), so any
    workload name gives one plain file name.
    """
    text = f"{name}-{shape}-{dtype}"
    stem = re.sub(r"[^A-Za-z0-9_.\-]", "_", text)
    stem = "_" + stem.lstrip(".-") if stem[:1] in (".", "-") else stem
    if len(stem) > _STEM_MAX:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass"), usedforsecurity=False)
        stem = f"{stem[:100]}-{digest.hexdigest()[:12]}"
    return stem


def gzip_trace(path: str) -> str:
    """Compress the chrome trace ``path`` to ``path + ".gz"`` (Perfetto opens it as is) and
    remove the original; returns the new path. Traces are text, 10-20x smaller gzipped."""
    import gzip

    dest = path + ".gz"
    # mtime=0: the same trace gives the same bytes. Contexts close in reverse: the
    # GzipFile (its trailer) before atomic_open renames the whole file into place.
    with (
        open(path, "rb") as src,
        atomic_open(dest) as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as dst,
    ):
        shutil.copyfileobj(src, dst)
    os.remove(path)
    return dest


def _copy_backend_trace(backend_dir: str, path: str) -> bool:
    """Copy the newest ``trace.json`` below ``backend_dir`` to ``path``; False if none."""
    from neuronasv.measure.neuron_trace import find_traces

    found = find_traces(backend_dir) if os.path.isdir(backend_dir) else []
    if not found:
        return False
    shutil.copyfile(found[-1][0], path)
    return True


def _warm_up(
    workload: Workload,
    backend: Backend,
    step: Callable[[], object],
    label: str,
    *,
    announce: bool = True,
) -> None:
    import torch

    n = max(backend.min_warmup, 3)
    if announce:
        extra = ", compiling" if workload.compiled else ""
        log.info("%s: warming up (%d iterations%s)", label, n, extra)
    # Same grad mode as the measured steps: grad mode is a dynamo guard, and a mismatch
    # would recompile inside the profiled window (``Torch-Compiled Region: 0/1``).
    with torch.no_grad():
        for _ in range(n):
            step()
    backend.synchronize()


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    """How :func:`profile_workload` samples a workload (everything but what and where).

    Attributes:
        samples: samples (profiler cycles, one sample each; with ``per_step``, samples
            in ``ceil(samples / active)`` cycles).
        active: iterations per cycle, averaged into one sample (or, with ``per_step``,
            each its own sample).
        seed: input seed (identical inputs for every variant).
        trace_dir: when given, export a chrome trace of the last cycle (and, on Neuron,
            the Neuron trace directory) there; names land in ``trace_files`` (relative).
        roofline: fill each op's ``flops``/``bytes``/``roofline_fraction`` from an extra,
            untimed pass with recorded shapes (:mod:`neuronasv.measure.roofline`); a
            failure there becomes a warning, never a lost profile.
        evidence: fill each op's ``signature`` and ``flops``/``bytes`` (the exact work,
            :mod:`neuronasv.measure.evidence`) from that same pass, even without
            ``roofline``.
        canary: time the device-health canary just before and after the profiled cycles
            (:mod:`neuronasv.measure.canary`) into ``WorkloadProfile.canary``.
        peak: the roof for the fractions (:class:`neuronasv.measure.peaks.Peak`); default
            :func:`neuronasv.measure.backends.peak_for` this backend.
        per_step: every iteration of a cycle is a sample of its own
            (:mod:`neuronasv.measure.steps`): ``active`` samples for one cycle's start and
            stop. Backends whose device time may only exist for a whole cycle (Neuron)
            refuse it.
    """

    samples: int = 10
    active: int = 1
    seed: int = 0
    trace_dir: str | None = None
    roofline: bool = True
    evidence: bool = True
    canary: bool = False
    peak: Any = None
    per_step: bool = False

    @property
    def cycles(self) -> int:
        """Profiler cycles that deliver ``samples`` samples."""
        return -(-self.samples // self.active) if self.per_step else self.samples


def profile_workload(
    workload: Workload,
    backend: Backend,
    *,
    shape: str,
    dtype: str,
    options: ProfileOptions = ProfileOptions(),
) -> WorkloadProfile:
    """Profile ``workload`` on ``backend``: device time per sample, per workload and per op.

    Args:
        workload: what to run.
        backend: where (see :func:`neuronasv.measure.backends.get_backend`).
        shape: shape label, e.g. ``"4x512"``.
        dtype: dtype label, e.g. ``"bfloat16"``.
        options: samples, iterations per sample, seed, traces and the extra passes
            (:class:`ProfileOptions`).

    Progress (``LABEL: warming up (...)``, ``LABEL: sample k/n``) goes to this module's
    logger at INFO.

    Raises:
        UsageError: bad shape, dtype, samples or active.
        BackendUnavailable: the workload cannot run on this backend (``skip_reason``).
        CaptureError: empty capture, or zero device time on an accelerator.
    """
    import torch

    _check_options(options, backend)
    dims = parse_shape(shape)
    tdtype = parse_dtype(dtype)
    shape_s, dtype_s = shape_label(dims), dtype_name(dtype)
    label = f"{workload.name} [{shape_s},{dtype_s}]"
    reason = workload.skip_reason(backend)
    if reason:
        raise BackendUnavailable(f"{workload.name} cannot run on {backend.name}: {reason}")

    # Build, warm-up and profile under the backend's measuring context (CPU: pinned threads).
    with backend.measuring():
        if workload.compiled:
            # Dynamo numbers recompilations (``Torch-Compiled Region: 0/3``): without a
            # reset, a compiled workload's op names would depend on what this process
            # compiled before, and its series would not line up across runs.
            torch._dynamo.reset()
        step = workload.build(dims, tdtype, backend.device, options.seed)
        _warm_up(workload, backend, step, label)

        stem = trace_file_stem(workload.name, shape_s, dtype_s)
        with contextlib.ExitStack() as stack:
            if options.trace_dir is not None:
                os.makedirs(options.trace_dir, exist_ok=True)
                backend_dir = os.path.join(options.trace_dir, stem)
            else:
                backend_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="neuronasv-"))
            capture = _Capture(label, backend, options, backend_dir=backend_dir, stem=stem)
            reading = _profile_cycles(capture, step)

        result = summarize_cycles(
            ProfiledConfig(workload.name, backend.name, shape_s, dtype_s),
            capture.cycles,
            active=1 if options.per_step else options.active,
            device_time_is_cpu=backend.device_time_is_cpu,
            trace_files=capture.trace_files,
            capture_hint=backend.capture_hint(),
        )
        if reading is not None:
            result = dataclasses.replace(result, canary=reading)
        if capture.rollup_errors:
            result = dataclasses.replace(
                result,
                warnings=(*result.warnings, f"module rollup skipped: {capture.rollup_errors[0]}"),
            )
        if options.roofline or options.evidence:
            result = _with_work(result, workload, backend, step, options)
        return result


def _check_options(options: ProfileOptions, backend: Backend) -> None:
    if options.samples < 1:
        raise UsageError(f"samples must be at least 1, got {options.samples}")
    if options.active < 1:
        raise UsageError(f"active must be at least 1, got {options.active}")
    if options.per_step and not backend.per_step_samples:
        raise UsageError(
            f"per-iteration samples are not available on {backend.name}: its device time"
            " may only exist for a whole profiler cycle (use --active to average instead)"
        )


class _Capture:
    """The profiler's per-cycle callback and what it gathers: one :class:`CycleStats` per
    sample, the trace files of the last cycle and the module-rollup errors."""

    def __init__(
        self, label: str, backend: Backend, options: ProfileOptions, *, backend_dir: str, stem: str
    ) -> None:
        self.label = label
        self.backend = backend
        self.options = options
        self.backend_dir = backend_dir
        self.stem = stem
        kwargs = dict(backend.profiler_kwargs(backend_dir))
        self.backend_hook = kwargs.pop("on_trace_ready", None)
        self.profiler_kwargs = kwargs
        self.cycles: list[CycleStats] = []
        self.trace_files: list[str] = []
        self.rollup_errors: list[str] = []
        self.done = 0  # profiler cycles delivered (== len(cycles) unless per_step)

    def on_cycle(self, prof: Any) -> None:
        if self.backend_hook is not None:
            self._run_backend_hook(prof)
        if self.options.trace_dir is not None and self.done == self.options.cycles - 1:
            self._export_trace(prof, self.options.trace_dir)
        self.done += 1
        if self.options.per_step:
            self._read_steps(prof)
            return
        self.cycles.append(read_cycle(prof, self.backend, self.backend_dir, self.rollup_errors))

    def _run_backend_hook(self, prof: Any) -> None:
        # The backend's exporter (NeuronProfiler) runs first, as in the documented
        # setup, so anything it correlates is in place before we read the events.
        assert self.backend_hook is not None
        try:
            self.backend_hook(prof)
        except Exception as exc:
            raise CaptureError(
                f"{self.label}: the {self.backend.name} trace exporter failed:"
                f" {type(exc).__name__}: {exc}",
                hint=self.backend.capture_hint(),
            ) from exc

    def _export_trace(self, prof: Any, trace_dir: str) -> None:
        path = os.path.join(trace_dir, f"{self.stem}.json")
        try:
            prof.export_chrome_trace(path)
        except RuntimeError as exc:
            # Kineto saves a cycle's trace once ("Trace is already saved"): the
            # backend's exporter (NeuronProfiler) did; keep a copy of its file.
            if not _copy_backend_trace(self.backend_dir, path):
                raise CaptureError(
                    f"{self.label}: exporting the chrome trace failed: {exc}"
                ) from exc
        self.trace_files.append(os.path.basename(gzip_trace(path)))
        if self.backend_hook is not None and os.path.isdir(self.backend_dir):
            self.trace_files.append(os.path.basename(self.backend_dir))

    def _read_steps(self, prof: Any) -> None:
        for events in split_steps(prof.events()):
            if len(self.cycles) < self.options.samples:
                one = extract_cycle(events, device_time_is_cpu=self.backend.device_time_is_cpu)
                self.cycles.append(_with_modules(one, events, self.backend, self.rollup_errors))


def _profile_cycles(capture: _Capture, step: Callable[[], object]) -> Any:
    """Run the profiled cycles into ``capture``; the canary's reading around them, if asked."""
    from torch.profiler import schedule

    from neuronasv.measure.torchprof import profile

    backend, options = capture.backend, capture.options
    prof = profile(
        activities=backend.activities(),
        schedule=schedule(
            wait=_WAIT, warmup=_WARMUP, active=options.active, repeat=options.cycles
        ),
        on_trace_ready=capture.on_cycle,
        **capture.profiler_kwargs,
    )
    canary_run = None
    if options.canary:
        from neuronasv.measure.canary import CanaryRun

        canary_run = CanaryRun(backend)
        canary_run.start()
    _step_through(prof, capture, step)
    return canary_run.finish() if canary_run is not None else None


def _step_through(
    prof: Any,
    capture: _Capture,
    step: Callable[[], object],
) -> None:
    """Every iteration of every cycle under the started profiler, stopped however it ends."""
    import torch

    options = capture.options
    with warnings.catch_warnings():
        # Per-cycle event clearing is exactly what we want; torch warns about it once.
        warnings.filterwarnings("ignore", message=_CYCLE_WARNING)
        with quiet_kineto_stderr():
            prof.start()
        try:
            with torch.no_grad():
                for _ in range(options.cycles * (_WAIT + _WARMUP + options.active)):
                    before = len(capture.cycles)
                    step()
                    capture.backend.synchronize()
                    with quiet_kineto_stderr():
                        prof.step()
                    if len(capture.cycles) > before:
                        log.info("%s: sample %d/%d", capture.label, len(capture.cycles),
                                 options.samples)  # fmt: skip
        finally:
            with quiet_kineto_stderr():
                prof.stop()


def _with_work(
    result: WorkloadProfile,
    workload: Workload,
    backend: Backend,
    step: Callable[[], object],
    options: ProfileOptions,
) -> WorkloadProfile:
    """``result`` with each op's work (and roofline fractions when asked) from an extra,
    untimed pass; a failure there is a warning on the profile, never a lost profile."""
    from neuronasv.measure.evidence import annotate_workload

    try:
        return annotate_workload(
            result, workload, backend, seed=options.seed, peak=options.peak, step=step,
            fractions=options.roofline,
        )  # fmt: skip
    except Exception as exc:  # the work is extra: never lose the measured profile
        return dataclasses.replace(
            result,
            warnings=(
                *result.warnings,
                f"work evidence skipped: {type(exc).__name__}: {exc}",
            ),
        )


def read_cycle(
    prof: Any, backend: Backend, backend_dir: str, errors: list[str], *, lean: bool = True
) -> CycleStats:
    """One profiler cycle's :class:`CycleStats` (ops, total, module rollup).

    A host-only cycle of a backend whose device time is the CPU's is read from the Kineto
    events directly (:func:`neuronasv.measure.torchprof.host_cycle`: the same numbers,
    without torch's ``FunctionEvent`` parse); any other — or ``lean=False`` — through
    ``key_averages()`` and ``events()``.
    """
    host = None
    # Only where device time is the CPU's: a backend whose device time comes from
    # elsewhere (Neuron's exported trace when key_averages has none) reads it through
    # torch's path and its fallback, even when a cycle's events are host-only.
    if lean and backend.device_time_is_cpu:
        from neuronasv.measure.torchprof import host_cycle

        try:
            host = host_cycle(prof)
        except (ImportError, AttributeError):  # another torch's internals: torch's own path
            host = None
    if host is not None:
        events, rows = host
        stats = extract_cycle(rows, device_time_is_cpu=backend.device_time_is_cpu)
        return _with_modules(stats, events, backend, errors)
    stats = extract_cycle(prof.key_averages(), device_time_is_cpu=backend.device_time_is_cpu)
    if not backend.device_time_is_cpu:
        backend.note_key_averages(stats.device_time_us > 0)
    if stats.device_time_us <= 0 and not backend.device_time_is_cpu:
        # No device time in key_averages (Neuron: the public TorchNeuron hands torch no
        # device activity): the backend's own capture (NTFFs, exported trace), if any.
        stats = backend.fallback_cycle(backend_dir, stats) or stats
    return _with_modules(stats, prof.events(), backend, errors)


def _with_modules(
    stats: CycleStats, events: Sequence[Any], backend: Backend, errors: list[str]
) -> CycleStats:
    """``stats`` with the module rollup of the same events (a cycle's, or one iteration's
    with ``per_step``): the event tree key_averages is built from, so no extra pass; what
    no op claims goes to the root. It is extra: a failure loses the module times (noted in
    ``errors``, a warning later), never the sample."""
    try:
        rolled = rollup_events(
            events,
            device_time_is_cpu=backend.device_time_is_cpu,
            total_us=stats.device_time_us,
            unattributed_op=UNATTRIBUTED_OP,
        )
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
        return stats
    return dataclasses.replace(stats, modules=rolled)


def op_input_shapes(
    workload: Workload, backend: Backend, *, shape: str, dtype: str, seed: int = 0
) -> dict[str, list[list[Any]]]:
    """Input shapes each op saw in one iteration (for FLOP/byte estimates, e.g. a roofline).

    Runs the workload once more with ``record_shapes=True`` (host activity only, so no
    device capture is needed) and returns ``{op: [input_shapes, ...]}`` with the distinct
    ``input_shapes`` lists torch reports for that op (one list entry per call signature).
    Op names are normalised like :func:`profile_workload`'s.
    """
    import torch
    from torch.profiler import ProfilerActivity

    from neuronasv.measure.torchprof import profile

    dims = parse_shape(shape)
    with backend.measuring(), warnings.catch_warnings():
        step = workload.build(dims, parse_dtype(dtype), backend.device, seed)
        _warm_up(workload, backend, step, workload.name, announce=False)
        warnings.filterwarnings("ignore", message=_CYCLE_WARNING)
        with (
            quiet_kineto_stderr(),
            profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof,
            torch.no_grad(),
        ):
            step()
            backend.synchronize()
        with quiet_kineto_stderr():
            averages = prof.key_averages(group_by_input_shape=True)
    out: dict[str, list[list[Any]]] = {}
    for entry in averages:
        key = str(entry.key)
        if is_bookkeeping(key) or not is_host_event(entry):
            continue
        shapes = list(entry.input_shapes or [])
        bucket = out.setdefault(normalize_op_name(key), [])
        if shapes not in bucket:
            bucket.append(shapes)
    return out
