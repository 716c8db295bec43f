"""The roof of a roofline (:class:`Peak`), and the ``NEURONASV_PEAK`` override's grammar.

A :class:`Peak` is the fastest a device can move bytes to and from its main memory (HBM, or
DRAM on a CPU) and the fastest it can do dense arithmetic in a given dtype. Published
figures (:func:`published_peak`) are the vendors' *dense* numbers (sparsity figures
halved), per chip unless the entry says otherwise; each backend keeps its devices' entries
with their sources beside them (``Backend.datasheet`` in
:mod:`neuronasv.measure.backends`: CUDA's GPUs in ``cuda.py``, Trainium's chips and one
NeuronCore's share in ``neuron.py``).

Which roof a backend has is the backend's to say (``Backend.roof``): CUDA its datasheet's
entry for its device model, Neuron one NeuronCore's share, the CPU its calibration
(:mod:`neuronasv.measure.calibration`, measured by :mod:`neuronasv.measure.cpu_roof`) — a
CPU has no datasheet, and no roof until one was measured honestly.
:func:`neuronasv.measure.backends.peak_for` applies the override, then asks the backend.

Override any of this with ``NEURONASV_PEAK`` (see :func:`parse_override`):
``NEURONASV_PEAK=h100-pcie`` names a table key; ``NEURONASV_PEAK="bw=2000,bfloat16=756,
float32=51"`` gives GB/s and TFLOP/s directly (e.g. for a clock-capped part).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from neuronasv import env as neuronasv_env
from neuronasv.dtypes import workload_dtype
from neuronasv.errors import UsageError
from neuronasv.format import format_rate

__all__ = ["PEAK_ENV", "Peak", "parse_override", "published_peak"]

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


def published_peak(
    name: str, bw_gbs: float, bf16_tf: float, fp32_tf: float, source: str
) -> Peak:
    """A datasheet's roof: GB/s, bfloat16 and float32 TFLOP/s (dense), and its source."""
    return Peak(
        name=name,
        memory_bytes_per_s=bw_gbs * _G,
        flops_per_s={"bfloat16": bf16_tf * _T, "float32": fp32_tf * _T},
        source=source,
    )


def parse_override(
    text: str, *, named: Callable[[str], Peak | None], known: Sequence[str]
) -> Peak:
    """Parse a ``NEURONASV_PEAK`` value.

    Either a name ``named`` knows (the backends' table keys, ``"h100-pcie"``, and aliases,
    ``"trn2/nc"`` for one NeuronCore: :func:`neuronasv.measure.backends.parse_peak_override`
    asks them) or comma-separated ``key=value`` pairs: ``bw`` in GB/s (required) and any
    number of ``<dtype>=<TFLOP/s>`` (``bfloat16=756,float32=51``).

    Raises:
        UsageError: naming the variable and the bad part (an unknown name: the ``known``).
    """
    text = text.strip()
    if not text:
        raise UsageError(f"{PEAK_ENV} is empty")
    if "=" not in text:
        found = named(text)
        if found is not None:
            return found
        raise UsageError(f"{PEAK_ENV}={text!r}: unknown device; known: {', '.join(known)}")
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
