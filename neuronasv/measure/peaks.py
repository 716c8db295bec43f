"""Published peak memory bandwidth and dense FLOP/s per device, plus overrides.

A :class:`Peak` is the roof of the roofline: the fastest a device can move bytes to and from
its main memory (HBM, or DRAM on a CPU) and the fastest it can do dense arithmetic in a
given dtype. Figures are the vendors' published *dense* numbers (sparsity figures halved),
per chip unless the entry says otherwise; the sources are cited beside each entry.

Trainium is profiled one NeuronCore at a time (``capture_enabled_for_nc="0"`` and a
workload on device ``neuron`` runs on one logical NeuronCore), so the Neuron entries used by
the neuron backend are the chip figures divided by the number of (logical) NeuronCores: that
is the roof a single-core workload can actually reach. The whole-chip entries stay in the
table for people who profile a whole chip.

Which roof a backend has is the backend's to say (``Backend.roof``, in
:mod:`neuronasv.measure.backends`): CUDA reads this table by its device model, Neuron one
NeuronCore's share, the CPU its calibration (:mod:`neuronasv.measure.calibration`, measured
by :mod:`neuronasv.measure.cpu_roof`) — a CPU has no datasheet, and no roof until one was
measured honestly. :func:`peak_for` applies the override, then asks the backend.

Override any of this with ``NEURONASV_PEAK`` (see :func:`parse_peak_override`):
``NEURONASV_PEAK=h100-pcie`` names a table key; ``NEURONASV_PEAK="bw=2000,bfloat16=756,
float32=51"`` gives GB/s and TFLOP/s directly (e.g. for a clock-capped part).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from neuronasv import env as neuronasv_env
from neuronasv.dtypes import workload_dtype
from neuronasv.errors import UsageError
from neuronasv.format import format_rate

__all__ = [
    "PEAKS",
    "PEAK_ENV",
    "HasRoof",
    "Peak",
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
        source: where the figures come from (URL, or ``"calibrated ..."``).
        measured: True when the figures were measured on this machine, not published.
        threads: the intra-op threads a measured roof was measured with (a CPU's roof is
            its threads' roof: the suite's count, ``NEURONASV_CPU_THREADS``); None when
            published.
    """

    name: str
    memory_bytes_per_s: float
    flops_per_s: Mapping[str, float] = field(default_factory=dict, hash=False)
    source: str = ""
    measured: bool = False
    threads: int | None = None

    def flops_for(self, dtype: str | None) -> float | None:
        """Peak FLOP/s for ``dtype`` (``"bfloat16"``), or None when the table lacks it."""
        if dtype is None:
            return None
        return self.flops_per_s.get(_peak_dtype(dtype))

    def describe(self) -> str:
        """One line for people: ``h100-sxm (published): 3.35 TB/s, bfloat16 990 TFLOP/s``."""
        parts = [format_rate(self.memory_bytes_per_s, "B/s")]
        for dt, v in sorted(self.flops_per_s.items()):
            parts.append(f"{dt} {format_rate(v, 'FLOP/s')}")
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


class HasRoof(Protocol):
    """What :func:`peak_for` asks of a backend (``neuronasv.measure.backends.Backend``)."""

    def roof(
        self, fingerprint: Mapping[str, str], *, env: Mapping[str, str], calibration: Peak | None
    ) -> Peak | None: ...


def peak_for(
    backend: HasRoof,
    fingerprint: Mapping[str, str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    calibration: Peak | None = None,
) -> Peak | None:
    """The roof for ``backend`` on this machine, or None when unknown.

    ``NEURONASV_PEAK`` (a table key or ``bw=...,bfloat16=...``) first; else the backend's
    own (``backend.roof``): CUDA the datasheet entry of the fingerprint's ``device_model``,
    Neuron one logical NeuronCore of trn1/trn2, the CPU its calibration (``calibration``,
    else the file ``NEURONASV_PEAK_FILE`` names — never a measurement of its own, and none
    when it was measured with other threads than the suite's).

    Args:
        backend: a ``Backend``.
        fingerprint: :func:`neuronasv.measure.fingerprint.collect_fingerprint` output.
        env: environment (default ``os.environ``), injectable for tests.
        calibration: this machine's calibrated CPU peak
            (:func:`neuronasv.measure.calibration.read_calibration`).
    """
    env = os.environ if env is None else env
    override = neuronasv_env.PEAK.read(env)
    if override:
        return parse_peak_override(override)
    return backend.roof(fingerprint or {}, env=env, calibration=calibration)
