"""A Neuron capture folder read into per-op device time, each reading naming its source.

TorchNeuron's profiler writes, per NeuronCore session (how-to-profile-workload.rst,
profile-artifacts.rst)::

    DIR/<instance-id>_pid_<pid>/<timestamp>/
        neff_<hash>_vnc_0.neff ...        (with neff_cache_dir)
        profile_nc_0_session_0.ntff       (DEVICE mode: every execution of the session)
        trace.json, ntrace.pb, trace_info.pb, ...

and ``neuron-explorer inspect`` / model-mode capture writes ``<hash>_instid_<i>_vnc_<n>.ntff``
beside ``neff_<hash>.neff`` (the numeric hash in the names must be identical). Each NTFF is
paired with its NEFF (:func:`pairings`): by that hash, else the folder's one NEFF, else —
a session NTFF that ran several NEFFs — the folder itself (``view -d``).

Sources, in order, for the device time of one cycle (one call of :func:`read_capture`):

1. **neuron-explorer summary-json** per NTFF: ``total_active_time``, else
   ``total_exec_time`` (never ``total_time``) — the NTFF's device time;
2. **the device profile** (Parquet by default, the full JSON without pyarrow) of the same
   NTFF: its engine rows (:data:`~neuronasv.measure.neuron_formats.EVENT_TABLE`) split
   that time over the framework's ops
   (:mod:`neuronasv.measure.neuron_ops`); its Summary stands in when summary-json failed;
   its ``ThrottleSummary`` and ``Metadata`` versions become the device state;
3. **trace.json device events**, then **privateuse1_driver spans (unverified)**
   (:mod:`neuronasv.measure.neuron_trace`) — only when no NTFF gave device time.

Every op's row names its source; :attr:`CaptureReading.tried` lists every source tried
and what it gave, for the capture error when none gave any.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from neuronasv.measure.neuron_explorer import TOOL, Explorer, Target
from neuronasv.measure.neuron_formats import SOURCE_SUMMARY_TOOL, DeviceProfile, SummaryReading
from neuronasv.measure.neuron_ops import split_profile
from neuronasv.measure.neuron_trace import read_new_traces

__all__ = [
    "STATE_PREFIX",
    "CaptureReading",
    "Pairing",
    "find_ntffs",
    "pairings",
    "read_capture",
    "read_new_capture",
]

#: Prefix of the device-state keys this reading adds (``neuron.throttle_active_time_ns``).
STATE_PREFIX = "neuron."
_MODEL_NTFF_RE = re.compile(r"^(?P<hash>\d+)_instid_\d+_vnc_(?P<vnc>\d+)\.ntff\Z")
_NEFF_HASH_RE = re.compile(r"^neff_(?P<hash>\d+)(?:_vnc_\d+)?\.neff\Z")


@dataclass(frozen=True)
class Pairing:
    """The NTFF(s) one ``view`` reads, with the NEFF(s) they ran (paths)."""

    target: Target
    ntffs: tuple[str, ...]
    neffs: tuple[str, ...]


def pairings(folder: str, names: Iterable[str]) -> list[Pairing]:
    """How the ``.ntff`` files among ``names`` in ``folder`` are viewed (pure)."""
    names = sorted(names)
    ntffs = [n for n in names if n.endswith(".ntff")]
    neffs = [n for n in names if n.endswith(".neff")]
    by_hash: dict[str, list[str]] = {}
    for n in neffs:
        m = _NEFF_HASH_RE.match(n)
        if m:
            by_hash.setdefault(m.group("hash"), []).append(n)
    out: list[Pairing] = []
    rest: list[str] = []
    p = lambda n: os.path.join(folder, n)  # noqa: E731
    for ntff in ntffs:
        m = _MODEL_NTFF_RE.match(ntff)
        paired = by_hash.get(m.group("hash"), []) if m else []
        if not paired and len(neffs) == 1:
            paired = neffs
        if not paired:
            stem = ntff[: -len(".ntff")]
            paired = [n for n in neffs if n[: -len(".neff")] == stem]
        if len(paired) == 1:
            out.append(
                Pairing(Target(ntff=p(ntff), neff=p(paired[0])), (p(ntff),), (p(paired[0]),))
            )
        else:
            rest.append(ntff)
    if rest:
        out.append(
            Pairing(Target(folder=folder), tuple(p(n) for n in rest), tuple(p(n) for n in neffs))
        )
    return out


def find_ntffs(root: str) -> list[tuple[str, int, int]]:
    """``(path, mtime_ns, size)`` of every ``.ntff`` below ``root``, oldest first."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".ntff"):
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                found.append((path, st.st_mtime_ns, st.st_size))
    found.sort(key=lambda t: (t[1], t[0]))
    return found


@dataclass(frozen=True)
class CaptureReading:
    """One cycle's device time from a capture.

    Attributes:
        times: op -> device µs over the cycle (every NTFF summed); empty: none.
        sources: op -> where its time came from (``neuron-explorer summary-json
            total_active_time``, the device profile's rows
            (:data:`~neuronasv.measure.neuron_formats.SOURCE_DEVICE_ROWS`), ...).
        tried: one line per source tried and what it gave.
        warnings: problems worth a warning (format, tool, inconsistent data); the caller
            logs them (once each).
        state: throttle fields (``neuron.*``), for the canary's device state.
        versions: tool and trace versions (``neuron.ntff_version`` ...).
    """

    times: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    tried: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    state: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)

    @property
    def total_us(self) -> float:
        return sum(self.times.values())

    def tried_line(self) -> str:
        """``sources tried: A; B; C`` (for a capture error)."""
        return "sources tried: " + ("; ".join(self.tried) or "none")


class _Acc:
    """What the readings of one cycle add up to."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.sources: dict[str, str] = {}
        self.tried: list[str] = []
        self.warnings: list[str] = []
        self.state: dict[str, str] = {}
        self.versions: dict[str, str] = {}

    def add(self, times: Mapping[str, float], source: str) -> None:
        for op, us in times.items():
            self.times[op] = self.times.get(op, 0.0) + us
            prev = self.sources.get(op)
            self.sources[op] = source if prev in (None, source) else f"{prev} + {source}"

    def warn(self, line: str) -> None:
        self.warnings.append(line)

    def reading(self) -> CaptureReading:
        return CaptureReading(
            dict(self.times),
            dict(self.sources),
            tuple(self.tried),
            tuple(self.warnings),
            dict(self.state),
            dict(self.versions),
        )


def _keep_state(acc: _Acc, summary: SummaryReading | None, profile: DeviceProfile | None) -> None:
    for src in (summary.throttle if summary else {}, profile.throttle if profile else {}):
        acc.state.update({STATE_PREFIX + k: v for k, v in src.items()})
    for src in (summary.versions if summary else {}, profile.versions if profile else {}):
        acc.versions.update({STATE_PREFIX + k: v for k, v in src.items()})


def _view(
    acc: _Acc, explorer: Explorer, pairing: Pairing, fmt: str | None
) -> tuple[tuple[SummaryReading, ...], DeviceProfile | None]:
    """The pairing's summaries (summary-json, else the device profile's own Summary) and
    its device profile; what failed is noted in ``acc``."""
    target = pairing.target
    outcome = explorer.summaries(target)
    if outcome.problem:
        acc.tried.append(f"{SOURCE_SUMMARY_TOOL} on {target.name}: {outcome.problem}")
        acc.warn(outcome.problem)
    profile: DeviceProfile | None = None
    if fmt is not None:
        prof_out = explorer.device_profile(target, fmt)
        profile = prof_out.profile
        if prof_out.problem:
            acc.tried.append(f"device profile ({fmt}) on {target.name}: {prof_out.problem}")
            acc.warn(prof_out.problem)
        elif profile is not None:
            acc.warnings.extend(
                f"{target.name}: neuron-explorer warning: {w}" for w in profile.warnings
            )
    summaries = outcome.summaries
    if not summaries and profile is not None and profile.summary is not None:
        summaries = (profile.summary,)  # the device profile's own Summary table
    if not summaries and not outcome.problem:
        acc.tried.append(f"{TOOL} on {target.name}: no summary")
    if profile is not None and not summaries:
        _keep_state(acc, None, profile)
    return summaries, profile


def _add_summary(
    acc: _Acc, summary: SummaryReading, profile: DeviceProfile | None, pairing: Pairing
) -> None:
    """One profile's device time into ``acc``, split by ``profile``'s rows when given."""
    if summary.device_time_us is None or summary.source is None:
        acc.tried.append(f"{summary.source_tool} on {summary.profile}: {summary.refusal}")
        return
    split = split_profile(
        summary.device_time_us,
        profile,
        name=summary.profile,
        neffs=[os.path.basename(n) for n in pairing.neffs],
    )
    for w in split.warnings:
        acc.warn(w)
    by_rows = profile is not None and bool(profile.events)
    acc.add(split.times, profile.source if profile is not None and by_rows else summary.source)
    acc.tried.append(
        f"{summary.source} on {summary.profile}: {summary.device_time_us:.3f} µs"
        + (f", split by {profile.source}" if profile is not None and by_rows else "")
    )


def _read_pairing(acc: _Acc, explorer: Explorer, pairing: Pairing, fmt: str | None) -> None:
    """Read one pairing into ``acc``."""
    summaries, profile = _view(acc, explorer, pairing, fmt)
    for summary in summaries:
        _keep_state(acc, summary, profile)
        # The rows of one device profile split its time; with several profiles in one
        # view (a folder) which rows are whose is not known: each profile is one row.
        _add_summary(acc, summary, profile if len(summaries) == 1 else None, pairing)


def read_capture(
    pairs: Sequence[Pairing],
    *,
    explorer: Explorer | None,
    fmt: str | None,
    tool_problem: str | None = None,
) -> CaptureReading:
    """Device time of ``pairs`` (one cycle's NTFFs) through ``explorer``.

    Args:
        pairs: what to view (:func:`pairings`).
        explorer: the tool, None when there is none (``tool_problem`` says why).
        fmt: the device-profile format (:func:`neuron_explorer.profile_format`), None to
            read the summary only.
    """
    acc = _Acc()
    if not pairs:
        acc.tried.append(f"{TOOL}: no new .ntff (DEVICE mode off, or no NeuronCore ran)")
        return acc.reading()
    if explorer is None:
        acc.tried.append(f"{TOOL}: {tool_problem or 'not found'}")
        return acc.reading()
    for pairing in pairs:
        _read_pairing(acc, explorer, pairing, fmt)
    return acc.reading()


def read_new_capture(
    root: str,
    *,
    explorer: Explorer | None,
    fmt: str | None,
    seen_ntffs: set[str],
    seen_traces: set[str],
    tool_problem: str | None = None,
) -> CaptureReading:
    """The NTFFs below ``root`` new since the last call, else the new ``trace.json``
    files (device events, then driver spans): one cycle's :class:`CaptureReading`."""
    new: dict[str, list[str]] = {}
    for path, mtime, size in find_ntffs(root):
        key = f"{path}\x1f{mtime}\x1f{size}"
        if key not in seen_ntffs:
            seen_ntffs.add(key)
            new.setdefault(os.path.dirname(path), []).append(path)
    pairs: list[Pairing] = []
    for folder, ntffs in sorted(new.items()):
        names = [n for n in os.listdir(folder) if n.endswith(".neff")]
        pairs.extend(pairings(folder, [*names, *(os.path.basename(p) for p in ntffs)]))
    reading = read_capture(pairs, explorer=explorer, fmt=fmt, tool_problem=tool_problem)
    trace = read_new_traces(root, seen=seen_traces)
    if reading.times:
        return reading
    times = trace.times
    return CaptureReading(
        dict(times),
        dict.fromkeys(times, trace.source or ""),
        (*reading.tried, *trace.tried),
        (*reading.warnings, *trace.warnings),
        reading.state,
        reading.versions,
    )
