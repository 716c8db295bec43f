"""Published peak memory bandwidth and dense FLOP/s per device, plus overrides.

A :class:`Peak` is the roof of the roofline: the fastest a device can move bytes to and from
its main memory (HBM, or DRAM on a CPU) and the fastest it can do dense arithmetic in a
given dtype. Figures are the vendors' published *dense* numbers (sparsity figures halved),
per chip unless the entry says otherwise; the sources are cited beside each entry.

Trainium is profiled one NeuronCore at a time (``capture_enabled_for_nc="0"`` and a
workload on device ``neuron`` runs on one logical NeuronCore), so the Neuron entries used by
:func:`peak_for` are the chip figures divided by the number of
(logical) NeuronCores: that is the roof a single-core workload can actually reach. The
whole-chip entries stay in the table for people who profile a whole chip.

A CPU has no datasheet roof: it is calibrated once per machine (:func:`calibrate`; ``neuronasv
doctor --calibrate``, or the first ``neuronasv run`` on the machine), stored with the
machine's record in the results folder (:func:`neuronasv.store.layout.peaks_file`), and read
by every later run (:func:`peak_for`); it is never re-measured per run.

Override any of this with ``NEURONASV_PEAK`` (see :func:`parse_peak_override`):
``NEURONASV_PEAK=h100-pcie`` names a table entry; ``NEURONASV_PEAK="bw=2000,bfloat16=756,
float32=51"`` gives GB/s and TFLOP/s directly (e.g. for a clock-capped part).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuronasv import env as neuronasv_env
from neuronasv.dtypes import label as dtype_label
from neuronasv.dtypes import workload_dtype
from neuronasv.errors import CorruptResultsError, UsageError

__all__ = [
    "PEAKS",
    "PEAK_ENV",
    "Peak",
    "calibrate",
    "load_calibration",
    "measure_cpu_peak",
    "neuroncore_peak",
    "parse_peak_override",
    "peak_for",
]

#: Environment variable that overrides the peak used for roofline fractions.
PEAK_ENV = neuronasv_env.PEAK.name

_G = 1e9
_T = 1e12


@dataclass(frozen=True)
class Peak:
    """The roof of a roofline.

    Attributes:
        name: table key or description (``"h100-sxm"``, ``"cpu (measured)"``).
        memory_bytes_per_s: peak main-memory bandwidth, bytes per second.
        flops_per_s: dense peak FLOP/s by dtype label (``"bfloat16"``, ``"float32"``, ...).
        source: where the figures come from (URL, or ``"measured"``).
        measured: True when the figures were measured on this machine, not published.
    """

    name: str
    memory_bytes_per_s: float
    flops_per_s: Mapping[str, float] = field(default_factory=dict, hash=False)
    source: str = ""
    measured: bool = False

    def flops_for(self, dtype: str | None) -> float | None:
        """Peak FLOP/s for ``dtype`` (``"bfloat16"``), or None when the table lacks it."""
        if dtype is None:
            return None
        return self.flops_per_s.get(_peak_dtype(dtype))

    def describe(self) -> str:
        """One line for people: ``h100-sxm: 3350 GB/s, bfloat16 989 TFLOP/s, ...``."""
        parts = [f"{self.memory_bytes_per_s / _G:.0f} GB/s"]
        for dt, v in sorted(self.flops_per_s.items()):
            tf = v / _T
            parts.append(f"{dt} {tf:.3g} TFLOP/s")
        if self.measured:
            kind = "calibrated" if self.source.startswith("calibrated") else "measured"
        elif self.source == PEAK_ENV:
            kind = f"set by {PEAK_ENV}"
        else:
            kind = "published"
        return f"{self.name} ({kind}): " + ", ".join(parts)


def _peak_dtype(spelling: str) -> str:
    """The table's key for a dtype: its canonical name, and float16 reads bfloat16 (both
    half-precision types run on the same tensor-core / tensor-engine path on every device
    in the table, which lists "FP16/BF16" together)."""
    name = workload_dtype(spelling) or spelling
    return "bfloat16" if name == "float16" else name


def _peak(name: str, bw_gbs: float, bf16_tf: float, fp32_tf: float, source: str) -> Peak:
    return Peak(
        name=name,
        memory_bytes_per_s=bw_gbs * _G,
        flops_per_s={"bfloat16": bf16_tf * _T, "float32": fp32_tf * _T},
        source=source,
    )


_TRN1_SRC = (
    "AWS Neuron docs, Trainium Architecture "
    "(awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/"
    "trainium.html): "
    "2 NeuronCore-v2 per chip, 190 FP16/BF16 TFLOPS, 47.5 FP32 TFLOPS, 820 GB/s HBM"
)
_TRN2_SRC = (
    "AWS Neuron docs, Trainium2 Architecture "
    "(awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/"
    "trainium2.html): "
    "8 NeuronCore-v3 per chip, 667 BF16/FP16 TFLOPS, 181 FP32 TFLOPS, 2.9 TB/s HBM"
)
_H100_SRC = (
    "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/): "
    "BF16 tensor TFLOPS listed with sparsity, halved here for dense; FP32 is the non-tensor "
    "figure (PyTorch keeps TF32 matmul off by default)"
)
_H200_SRC = (
    "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/): "
    "4.8 TB/s HBM3e; BF16 tensor TFLOPS listed with sparsity, halved here for dense"
)

#: Whole-chip / whole-GPU published peaks (dense), keyed by short name.
PEAKS: dict[str, Peak] = {
    "trn1": _peak("trn1", 820, 190, 47.5, _TRN1_SRC),
    "trn2": _peak("trn2", 2900, 667, 181, _TRN2_SRC),
    # SXM5: 3.35 TB/s, 1,979 BF16 sparse -> 989.5 dense, 67 FP32.
    "h100-sxm": _peak("h100-sxm", 3350, 989.5, 67, _H100_SRC),
    # PCIe: 2.0 TB/s, 1,513 BF16 sparse -> 756.5 dense, 51 FP32.
    "h100-pcie": _peak("h100-pcie", 2000, 756.5, 51, _H100_SRC),
    # NVL: 3.9 TB/s, 1,671 BF16 sparse -> 835.5 dense, 60 FP32.
    "h100-nvl": _peak("h100-nvl", 3900, 835.5, 60, _H100_SRC),
    # H200 SXM: same GH100 compute as H100 SXM, 4.8 TB/s.
    "h200-sxm": _peak("h200-sxm", 4800, 989.5, 67, _H200_SRC),
    # H200 NVL: 4.8 TB/s, 1,671 BF16 sparse -> 835.5 dense, 60 FP32.
    "h200-nvl": _peak("h200-nvl", 4800, 835.5, 60, _H200_SRC),
}

# Physical NeuronCores per chip, and the default logical-NeuronCore size (LNC): Trn2
# defaults to LNC=2 (two physical cores act as one logical core), Trn1 has no LNC.
_NEURON_CORES = {"trn1": (2, 1), "trn2": (8, 2)}


def neuroncore_peak(chip: str, lnc: int | None = None) -> Peak:
    """The share of a Trainium chip's peak that one logical NeuronCore can reach.

    Args:
        chip: ``"trn1"`` or ``"trn2"``.
        lnc: logical NeuronCore size (physical cores per logical core); default is the
            chip's default (Trn1: 1, Trn2: 2). Read it from ``NEURON_LOGICAL_NC_CONFIG``
            when set.

    Returns:
        A :class:`Peak` named e.g. ``"trn2/nc (lnc=2)"``.
    """
    if chip not in _NEURON_CORES:
        raise UsageError(f"unknown Trainium chip {chip!r}; known: {', '.join(_NEURON_CORES)}")
    cores, default_lnc = _NEURON_CORES[chip]
    lnc = default_lnc if lnc is None else lnc
    if lnc < 1 or lnc > cores:
        raise UsageError(f"logical NeuronCore size {lnc} out of range 1..{cores} for {chip}")
    share = lnc / cores
    whole = PEAKS[chip]
    return Peak(
        name=f"{chip}/nc (lnc={lnc})",
        memory_bytes_per_s=whole.memory_bytes_per_s * share,
        flops_per_s={k: v * share for k, v in whole.flops_per_s.items()},
        source=whole.source + f"; one logical NeuronCore = {lnc}/{cores} of the chip",
    )


def parse_peak_override(text: str) -> Peak:
    """Parse a ``NEURONASV_PEAK`` value.

    Either a table key (``"h100-pcie"``, ``"trn2/nc"`` for one NeuronCore) or
    comma-separated ``key=value`` pairs: ``bw`` in GB/s (required) and any number of
    ``<dtype>=<TFLOP/s>`` (``bfloat16=756,float32=51``).

    Raises:
        UsageError: naming the variable and the bad part.
    """
    text = text.strip()
    if not text:
        raise UsageError(f"{PEAK_ENV} is empty")
    if "=" not in text:
        if text in PEAKS:
            return PEAKS[text]
        if text.endswith("/nc") and text[:-3] in _NEURON_CORES:
            return neuroncore_peak(text[:-3])
        known = ", ".join([*PEAKS, *(f"{c}/nc" for c in _NEURON_CORES)])
        raise UsageError(f"{PEAK_ENV}={text!r}: unknown device; known: {known}")
    bw: float | None = None
    flops: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not key or not (number > 0 and number < float("inf")):
            raise UsageError(
                f"{PEAK_ENV}: bad entry {part.strip()!r}; expected key=positive number,"
                " e.g. bw=2000,bfloat16=756,float32=51"
            )
        if key == "bw":
            bw = number * _G
        else:
            flops[_peak_dtype(key)] = number * _T
    if bw is None:
        raise UsageError(f"{PEAK_ENV}: 'bw=<GB/s>' is required in {text!r}")
    return Peak(name="override", memory_bytes_per_s=bw, flops_per_s=flops, source=PEAK_ENV)


# --- measuring a CPU (calibration) -------------------------------------------------------

_cpu_peak_lock = threading.Lock()
_cpu_peak_cache: dict[tuple[int, tuple[str, ...]], Peak] = {}


def _best_seconds(fn: Callable[[], object], repeats: int, clock: Callable[[], float]) -> float:
    fn()  # warm-up: first-touch page faults, kernel selection
    best = math.inf
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return max(best, 1e-9)


def _copy_fn(n: int) -> Callable[[], object]:
    import torch

    src = torch.ones(n, dtype=torch.float32)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def _mm_fn(a: Any, b: Any) -> Callable[[], object]:
    import torch

    return lambda: torch.mm(a, b)


def measure_cpu_peak(
    dtypes: Sequence[str] = ("float32", "bfloat16"),
    *,
    copy_mib: int = 32,
    clock: Callable[[], float] = time.perf_counter,
    refresh: bool = False,
) -> Peak:
    """Measure this CPU's memory bandwidth and matmul throughput (cached per process).

    This is the calibration (:func:`calibrate`), run once per machine on a quiet machine
    and stored; a run never re-measures it (a loaded machine measured 0.285 and 0.842
    TFLOP/s bf16 a minute apart).

    Bandwidth: best of 5 ``dst.copy_(src)`` over ``copy_mib`` MiB (bytes read + written),
    larger than the last-level cache share of a CI runner. Throughput: best of 3 square
    matmuls per dtype at sizes doubling from 128 until one call takes > 20 ms (or 1024),
    keeping the best rate (bf16 matmul without AVX512-BF16/AMX is ~60x slower than fp32,
    so a fixed size would either waste seconds or measure overhead). Runs under the
    current ``torch.get_num_threads()`` — the cache is keyed on it. Takes about a second.
    A shared machine measures low (the neighbours' load): these are lower bounds of the
    peak; set ``NEURONASV_PEAK`` for a fixed roof.
    """
    import torch

    threads = torch.get_num_threads()
    key = (threads, tuple(dtypes))
    with _cpu_peak_lock:
        if not refresh and key in _cpu_peak_cache:
            return _cpu_peak_cache[key]
        n = copy_mib * 2**20 // 4
        bw = 2 * n * 4 / _best_seconds(_copy_fn(n), 5, clock)
        flops: dict[str, float] = {}
        for label in dtypes:
            dt = getattr(torch, label, None)
            if not isinstance(dt, torch.dtype):
                raise UsageError(f"measure_cpu_peak: unknown dtype {label!r}")
            # The best rate over growing sizes: small sizes are overhead-bound, and on a
            # loaded machine any single size can be unlucky.
            best_rate, size = 0.0, 128
            while True:
                a = torch.ones(size, size, dtype=dt)
                b = torch.ones(size, size, dtype=dt)
                seconds = _best_seconds(_mm_fn(a, b), 3, clock)
                best_rate = max(best_rate, 2 * size**3 / seconds)
                if seconds > 0.02 or size >= 1024:
                    break
                size *= 2
            flops[dtype_label(label)] = best_rate
        peak = Peak(
            name=f"cpu ({threads} thread{'s' if threads != 1 else ''}, measured)",
            memory_bytes_per_s=bw,
            flops_per_s=flops,
            source=f"measured: {copy_mib} MiB copy, square matmul per dtype",
            measured=True,
        )
        _cpu_peak_cache[key] = peak
        return peak


def _neuron_chip(fingerprint: Mapping[str, str]) -> str | None:
    text = " ".join(fingerprint.get(k, "") for k in ("device_model", "instance_type", "platform"))
    text = text.lower()
    if "trn2" in text or "trainium2" in text:
        return "trn2"
    if "trn1" in text or "trainium" in text:
        return "trn1"
    return None


def _cuda_peak_key(device_model: str) -> str | None:
    model = device_model.upper()
    for gpu in ("H200", "H100"):
        if gpu in model:
            if "NVL" in model:
                return f"{gpu.lower()}-nvl"
            if "PCIE" in model:
                return f"{gpu.lower()}-pcie" if gpu == "H100" else "h200-nvl"
            return f"{gpu.lower()}-sxm"
    return None


def peak_for(
    backend: Any,
    fingerprint: Mapping[str, str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    calibration: Peak | None = None,
) -> Peak | None:
    """The roof for ``backend`` on this machine, or None when unknown.

    Order: ``NEURONASV_PEAK`` (a table key or ``bw=...,bfloat16=...``); then by backend:
    ``cpu`` -> the machine's calibration (``calibration``, else the file
    ``NEURONASV_PEAK_FILE`` names: ``neuronasv run`` points it at the machine's record in
    the results folder), never a measurement of its own — without a calibration the CPU
    has no roof; ``cuda`` -> the datasheet entry matching the fingerprint's
    ``device_model`` (H100 SXM/PCIe/NVL, H200 SXM/NVL); ``neuron`` -> one logical
    NeuronCore of trn1/trn2 (logical size from ``NEURON_LOGICAL_NC_CONFIG``).

    Args:
        backend: a Backend (its ``name`` is read) or a backend name.
        fingerprint: :func:`neuronasv.measure.fingerprint.collect_fingerprint` output.
        env: environment (default ``os.environ``), injectable for tests.
        calibration: this machine's calibrated peak (see :func:`load_calibration`).
    """
    env = os.environ if env is None else env
    override = neuronasv_env.PEAK.read(env)
    if override:
        return parse_peak_override(override)
    name = backend if isinstance(backend, str) else getattr(backend, "name", "")
    fp = fingerprint or {}
    if name == "cpu":
        if calibration is None:
            path = neuronasv_env.PEAK_FILE.read(env)
            calibration = load_calibration(path) if path else None
        return calibration
    if name == "cuda":
        key = _cuda_peak_key(fp.get("device_model", ""))
        return PEAKS[key] if key else None
    if name == "neuron":
        chip = _neuron_chip(fp)
        if chip is None:
            return None
        lnc_text = env.get("NEURON_LOGICAL_NC_CONFIG", "")
        lnc = int(lnc_text) if lnc_text.isdigit() else None
        return neuroncore_peak(chip, lnc)
    return None


# --- the calibration file ----------------------------------------------------------------

_CALIBRATION_KIND = "neuronasv.peaks"
_CALIBRATION_VERSION = 1


def calibrate(
    *, measure: Callable[[], Peak] | None = None, clock: Callable[[], str] | None = None
) -> tuple[Peak, str]:
    """Measure this CPU's roof once (fresh, not the process cache): ``(peak, file text)``.

    Run it on a quiet machine (``neuronasv doctor --calibrate``; ``neuronasv run`` does it
    once when the machine has no calibration yet): neighbours' load lowers the figures.
    """
    import datetime

    peak = (measure or (lambda: measure_cpu_peak(refresh=True)))()
    when = (clock or (lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")))()
    doc = {
        "kind": _CALIBRATION_KIND,
        "version": _CALIBRATION_VERSION,
        "backend": "cpu",
        "calibrated": when,
        "name": peak.name.replace(", measured", ""),
        "memory_bytes_per_s": peak.memory_bytes_per_s,
        "flops_per_s": dict(sorted(peak.flops_per_s.items())),
        "source": f"calibrated {when}: {peak.source.removeprefix('measured: ')}",
    }
    return _peak_of(doc, "<calibration>"), json.dumps(doc, indent=1) + "\n"


def _peak_of(doc: Any, source: str) -> Peak:
    ok = (
        isinstance(doc, dict)
        and doc.get("kind") == _CALIBRATION_KIND
        and doc.get("version") == _CALIBRATION_VERSION
        and isinstance(doc.get("memory_bytes_per_s"), (int, float))
        and isinstance(doc.get("flops_per_s"), dict)
        and all(isinstance(v, (int, float)) and v > 0 for v in doc["flops_per_s"].values())
        and doc["memory_bytes_per_s"] > 0
    )
    if not ok:
        raise CorruptResultsError(
            f"{source}: not a peak calibration (version {_CALIBRATION_VERSION})",
            hint="re-measure it: neuronasv doctor --calibrate",
        )
    return Peak(
        name=str(doc.get("name", "cpu (calibrated)")),
        memory_bytes_per_s=float(doc["memory_bytes_per_s"]),
        flops_per_s={str(k): float(v) for k, v in doc["flops_per_s"].items()},
        source=str(doc.get("source", "calibrated")),
        measured=True,
    )


def load_calibration(path: str) -> Peak | None:
    """The calibrated peak stored at ``path``; None when there is none.

    Raises:
        CorruptResultsError: the file exists but is not a calibration (exit 5).
    """
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    return _peak_of(doc, path)
