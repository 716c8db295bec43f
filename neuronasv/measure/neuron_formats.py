"""What Neuron Explorer writes, read into frozen types (pure: no process, no file).

``neuron-explorer view -n X.neff -s Y.ntff`` (aws-neuron-sdk
``tools/neuron-explorer``) renders one device profile in several formats; this module reads
three of them, by the field names, nesting and units the Neuron docs give:

* **summary-json** (``--output-format summary-json``, printed on stdout, "does not
  affect" the full-JSON end of support): one top-level key per device profile, each
  holding a flat object of summary metrics. Times (``total_time``, ``total_active_time``,
  ``total_exec_time``, ``*_engine_active_time``) are **seconds**; ``*_percent`` fields are
  **fractions** in the real outputs the audit read (0.00062 = 0.062 %); counts and bytes
  are integers; throttle fields (``throttle_avg_util_limit_nc0_percent``,
  ``throttle_active_nc0_time_ns``, ``throttle_activity_<n>_*``) and versions
  (``runtime_version``, ``profiler_version``, ``compiler_version``) ride along.
* **Explorer JSON** (``--output-format json``, the legacy full profile; 2.33 is the last
  release that supports it): a top-level object of tables, each a **list of row objects**
  (``summary``, ``instruction``, ``metadata``, ``neff_header``, ``warnings``, ...).
  ``instruction`` rows carry ``timestamp`` and ``duration`` in **nanoseconds**, ``label``
  (the engine track), ``opcode``, ``hlo_name``, ``layer``.
* **Parquet** (the default; ``Profile Parquet Schema Reference``): one table per file,
  read elsewhere (:mod:`neuronasv.measure.neuron_explorer`) into the same row objects:
  ``Summary``, ``Instruction`` (``start_ts``/``end_ts``/``duration_ns`` ns, ``engine``,
  ``opcode``, ``layer``, ``hlo_name``), ``ExecutionInfo`` (``neff_name``,
  ``execution_start_ts``/``execution_end_ts`` ns), ``Metadata`` (``ntff_version``,
  ``profile_schema_version``, ``runtime_version``, ``explorer_version``,
  ``compiler_version``), ``NeffHeader`` (``network_name``), ``ThrottleSummary``
  (``nc_idx``, ``throttle_type``, ``throttle_active_time_ns``,
  ``throttle_active_time_percent``), ``Warning`` (``category``, ``message``).

**The metric.** Device time is ``total_active_time`` — "the union of all active intervals"
of engines, DMA and collectives, so semaphore waits and idle gaps are out — else
``total_exec_time`` ("earliest non-setup instruction or DMA packet to the latest, excluding
setup/teardown opcodes"). Never ``total_time``: it runs from the runtime's start to stop
notification, semaphore waits included (about 300x the engines' active time on a tiny
matmul in a real profile). A profile with only ``total_time`` gives no device time and says
why (:attr:`SummaryReading.refusal`).

**Formats are sniffed, not trusted** (:func:`sniff`): a file that is not what a reader
expects raises :class:`FormatMismatch` naming what it looks like (summary-json, Explorer
JSON, Parquet, chrome trace), so a caller warns in one line instead of reading "no device
time" out of the wrong file.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHROME_TRACE",
    "DEVICE_TIME_FIELDS",
    "EVENT_COLUMNS",
    "EVENT_TABLE",
    "EXPLORER_JSON",
    "PARQUET",
    "PARQUET_MAGIC",
    "SETUP_OPCODES",
    "SOURCE_DEVICE_ROWS",
    "SOURCE_DRIVER_SPANS",
    "SOURCE_KEY_AVERAGES",
    "SOURCE_PROFILE_SUMMARY",
    "SOURCE_SUMMARY_TOOL",
    "SOURCE_TRACE_DEVICE",
    "SUMMARY_JSON",
    "TABLES",
    "DeviceProfile",
    "EngineEvent",
    "Execution",
    "FormatMismatch",
    "SummaryReading",
    "mismatch_line",
    "parse_explorer_json",
    "parse_parquet_tables",
    "parse_summary_json",
    "sniff",
    "sniff_bytes",
]

#: What a file can look like (:func:`sniff`).
SUMMARY_JSON = "summary-json"
EXPLORER_JSON = "Explorer JSON"
PARQUET = "Parquet"
CHROME_TRACE = "chrome trace"

#: The first bytes of every Parquet file ("PAR1").
PARQUET_MAGIC = b"PAR1"

#: Where a device-time reading came from, in the words every view prints (one place, so
#: the metrics registry can lift them); a summary's source is its tool and field
#: (``neuron-explorer summary-json total_active_time``), ``{fmt}`` is filled in.
SOURCE_KEY_AVERAGES = "key_averages"
SOURCE_SUMMARY_TOOL = "neuron-explorer summary-json"
SOURCE_DEVICE_ROWS = "device-profile instruction rows ({fmt})"
SOURCE_PROFILE_SUMMARY = "device-profile Summary ({fmt})"
SOURCE_TRACE_DEVICE = "trace.json device events"
SOURCE_DRIVER_SPANS = "privateuse1_driver spans (unverified)"

#: Summary fields that are device time, best first (seconds). ``total_time`` is not one.
DEVICE_TIME_FIELDS: tuple[str, ...] = ("total_active_time", "total_exec_time")
_TOTAL_TIME = "total_time"
_SUMMARY_MARKERS = frozenset({_TOTAL_TIME, *DEVICE_TIME_FIELDS, "neuroncore_cycle_count"})

#: Setup/teardown opcodes ``total_exec_time`` leaves out (Summary field description):
#: an instruction with one of these is waiting or bookkeeping, not an op's work.
SETUP_OPCODES = frozenset(
    {
        "NOP",
        "SET_ORDERING_MODE",
        "EVENT_SEMAPHORE",
        "EVENT_SEMAPHORE_RANGE_CLEAR",
        "NOTIFY",
        "COMPARE_BRANCH",
        "DRAIN",
        "WRITE",
        "TENSOR_LOAD",
        "MODIFY_POOL_CONFIG",
    }
)

#: The Parquet table of engine events: Neuron calls each compute-engine step an
#: instruction (its ``Instruction`` table; Explorer JSON's ``instruction`` rows). The rest
#: of neuronasv calls them engine events (:class:`EngineEvent`): the word is kept here,
#: Neuron's own, apart from the metric of that name (:mod:`neuronasv.metrics`).
EVENT_TABLE = "Instruction"
#: Parquet tables read (the rest of a profile is not needed for device time).
TABLES: tuple[str, ...] = (
    "Summary",
    EVENT_TABLE,
    "ExecutionInfo",
    "Metadata",
    "NeffHeader",
    "ThrottleSummary",
    "Warning",
)
#: Engine-event columns read (Parquet names; Explorer JSON's are mapped onto them).
EVENT_COLUMNS: tuple[str, ...] = (
    "start_ts",
    "end_ts",
    "duration_ns",
    "engine",
    "opcode",
    "layer",
    "hlo_name",
)
#: Metadata fields kept (versions: tool/trace skew is a finding).
VERSION_FIELDS: tuple[str, ...] = (
    "ntff_version",
    "profile_schema_version",
    "runtime_version",
    "driver_version",
    "explorer_version",
    "profiler_version",
    "compiler_version",
    "instance_type",
)
_S_TO_US = 1e6
_NS_TO_US = 1e-3


class FormatMismatch(ValueError):
    """The data is not the format a reader expects; ``found`` is what it looks like."""

    def __init__(self, expected: str, found: str) -> None:
        super().__init__(f"expected {expected}, but it looks like {found}")
        self.expected = expected
        self.found = found


def mismatch_line(where: str, exc: FormatMismatch) -> str:
    """The one-line warning for a file that is not what its reader expects."""
    return f"{where}: {exc}; not read as device time"


# -- sniffing -----------------------------------------------------------------------------
def _is_rows(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(r, Mapping) for r in value)


def _has_summary_fields(obj: Any) -> bool:
    return isinstance(obj, Mapping) and bool(_SUMMARY_MARKERS & set(obj))


def sniff(data: Any) -> str:
    """What loaded JSON looks like: :data:`SUMMARY_JSON`, :data:`EXPLORER_JSON`,
    :data:`CHROME_TRACE`, or ``"JSON of another kind (keys: ...)"``."""
    if isinstance(data, Mapping):
        if "traceEvents" in data:
            return CHROME_TRACE
        tables = [k for k, v in data.items() if _is_rows(v)]
        if tables and ({"summary", "instruction"} & set(data)):
            return EXPLORER_JSON
        if data and all(_has_summary_fields(v) for v in data.values()):
            return SUMMARY_JSON
        if _has_summary_fields(data):
            return SUMMARY_JSON
        keys = ", ".join(sorted(str(k) for k in data)[:4]) or "none"
        return f"JSON of another kind (keys: {keys})"
    if isinstance(data, list):
        if data and all(isinstance(e, Mapping) and "ph" in e for e in data[:20]):
            return CHROME_TRACE
        return "a JSON list"
    return f"JSON {type(data).__name__}"


def sniff_bytes(head: bytes) -> str:
    """What a file's first bytes look like: :data:`PARQUET`, ``JSON`` or ``binary``."""
    if head.startswith(PARQUET_MAGIC):
        return PARQUET
    text = head.lstrip()
    if text[:1] in (b"{", b"["):
        return "JSON"
    return "binary (not JSON, not Parquet)"


# -- values ---------------------------------------------------------------------------------
def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _int(value: Any) -> int | None:
    x = _number(value)
    return int(x) if x is not None else None


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


# -- summary ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SummaryReading:
    """One device profile's summary (µs where a time).

    Attributes:
        profile: the profile's name (summary-json's top-level key, else the file's).
        device_time_us: the device time (:data:`DEVICE_TIME_FIELDS`), None when none.
        device_time_field: the field it came from (``total_active_time``), or None.
        total_time_us: ``total_time`` (semaphore waits included), for comparison only.
        refusal: why there is no device time ("only total_time ..."), or None.
        throttle: throttle fields, raw text, by their documented names.
        versions: version fields (:data:`VERSION_FIELDS`) present, raw text.
        source_tool: what printed it: :data:`SOURCE_SUMMARY_TOOL`, or a device profile's
            own Summary table (``device-profile Summary (Parquet)``).
    """

    profile: str
    device_time_us: float | None
    device_time_field: str | None
    total_time_us: float | None
    refusal: str | None = None
    throttle: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)
    source_tool: str = SOURCE_SUMMARY_TOOL

    @property
    def source(self) -> str | None:
        """``neuron-explorer summary-json total_active_time`` (None without device time)."""
        if not self.device_time_field:
            return None
        return f"{self.source_tool} {self.device_time_field}"


def summary_from_row(
    row: Mapping[str, Any], profile: str, *, source_tool: str = SOURCE_SUMMARY_TOOL
) -> SummaryReading:
    """A :class:`SummaryReading` from one flat summary object (any of the three formats)."""
    total = _number(row.get(_TOTAL_TIME))
    total_us = total * _S_TO_US if total is not None else None
    device: tuple[float, str] | None = None
    for name in DEVICE_TIME_FIELDS:
        value = _number(row.get(name))
        if value is not None and value > 0:
            device = (value * _S_TO_US, name)
            break
    refusal = None
    if device is None:
        present = [n for n in DEVICE_TIME_FIELDS if n in row]
        if total_us is not None and not present:
            refusal = (
                f"only total_time ({total_us:.3f} µs), which counts semaphore waits: not"
                f" device time (no {' or '.join(DEVICE_TIME_FIELDS)})"
            )
        elif present:
            refusal = f"{' and '.join(present)} not positive"
        else:
            refusal = f"no {' or '.join(DEVICE_TIME_FIELDS)}"
    throttle = {
        str(k): _text(v) for k, v in row.items() if str(k).startswith("throttle") and v is not None
    }
    versions = {k: _text(row[k]) for k in VERSION_FIELDS if _text(row.get(k))}
    return SummaryReading(
        profile=profile,
        device_time_us=device[0] if device else None,
        device_time_field=device[1] if device else None,
        total_time_us=total_us,
        refusal=refusal,
        throttle=throttle,
        versions=versions,
        source_tool=source_tool,
    )


def parse_summary_json(data: Any, name: str) -> tuple[SummaryReading, ...]:
    """summary-json: one reading per top-level key (a flat object is read as one profile
    called ``name``).

    Raises:
        FormatMismatch: ``data`` is not summary-json.
    """
    if isinstance(data, Mapping) and data:
        if all(_has_summary_fields(v) for v in data.values()):
            return tuple(summary_from_row(v, str(k)) for k, v in data.items())
        if _has_summary_fields(data) and sniff(data) == SUMMARY_JSON:
            return (summary_from_row(data, name),)
    raise FormatMismatch(SUMMARY_JSON, sniff(data))


# -- device profile ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EngineEvent:
    """One compute-engine instruction: a row of the profile's :data:`EVENT_TABLE` (ns from
    the profile's start).

    Attributes:
        start_ns, end_ns: when it ran.
        engine: the engine (or its timeline track).
        opcode: ``MATMUL``, ``EVENT_SEMAPHORE``, ...
        layer: the framework-level name (``layer``: "the name from the framework level
            debug info", e.g. ``.../aten.add``), "" when none.
        hlo_name: the HLO operation (``dot.1``), "" when none.
    """

    start_ns: int
    end_ns: int
    engine: str
    opcode: str
    layer: str = ""
    hlo_name: str = ""

    @property
    def is_setup(self) -> bool:
        """A wait or bookkeeping instruction (:data:`SETUP_OPCODES`), not work."""
        return self.opcode.upper() in SETUP_OPCODES


@dataclass(frozen=True)
class Execution:
    """One NEFF execution inside a profile (``ExecutionInfo``; ns, None when unknown)."""

    index: int
    neff: str
    start_ns: int | None
    end_ns: int | None


@dataclass(frozen=True)
class DeviceProfile:
    """One device profile's tables, as far as device time needs them.

    Attributes:
        fmt: :data:`PARQUET` or :data:`EXPLORER_JSON`.
        summary: its summary, None when the profile has none.
        events: compute-engine instructions (:class:`EngineEvent`), in time order.
        executions: NEFF executions (Parquet ``ExecutionInfo``), in order.
        neff_names: ``NeffHeader.network_name`` values.
        versions: :data:`VERSION_FIELDS` found in ``Metadata``.
        throttle: ``ThrottleSummary`` (``throttle_type`` ``all`` when present, else the
            first row) as ``throttle_active_time_ns`` etc., raw text.
        warnings: the profile's own ``Warning`` rows (``category: message``).
    """

    fmt: str
    summary: SummaryReading | None
    events: tuple[EngineEvent, ...]
    executions: tuple[Execution, ...] = ()
    neff_names: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    throttle: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        """``device-profile instruction rows (Parquet)``."""
        return SOURCE_DEVICE_ROWS.format(fmt=self.fmt)


def _event(row: Mapping[str, Any]) -> EngineEvent | None:
    """An :class:`EngineEvent` from a Parquet row or an Explorer-JSON row (None: unusable)."""
    start = _int(row.get("start_ts", row.get("timestamp")))
    end = _int(row.get("end_ts"))
    dur = _int(row.get("duration_ns", row.get("duration")))
    if start is None:
        return None
    if end is None and dur is not None:
        end = start + dur
    if end is None or end < start:
        return None
    return EngineEvent(
        start_ns=start,
        end_ns=end,
        engine=_text(row.get("engine", row.get("label"))),
        opcode=_text(row.get("opcode")),
        layer=_text(row.get("layer")),
        hlo_name=_text(row.get("hlo_name")),
    )


def _events(rows: Iterable[Mapping[str, Any]]) -> tuple[EngineEvent, ...]:
    out = [i for i in (_event(r) for r in rows) if i is not None]
    out.sort(key=lambda i: (i.start_ns, i.end_ns))
    return tuple(out)


def _executions(rows: Iterable[Mapping[str, Any]]) -> tuple[Execution, ...]:
    out = []
    for k, r in enumerate(rows):
        index = _int(r.get("execution_index"))
        out.append(
            Execution(
                index=k if index is None else index,
                neff=_text(r.get("neff_name")),
                start_ns=_int(r.get("execution_start_ts")),
                end_ns=_int(r.get("execution_end_ts")),
            )
        )
    out.sort(key=lambda e: e.index)
    return tuple(out)


def _throttle(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    if not rows:
        return {}
    row = next((r for r in rows if _text(r.get("throttle_type")) == "all"), rows[0])
    return {
        str(k): _text(v)
        for k, v in row.items()
        if str(k).startswith(("throttle_active", "max_achievable")) and _text(v)
    }


def _first(rows: Any) -> Mapping[str, Any]:
    if _is_rows(rows) and rows:
        return rows[0]
    return rows if isinstance(rows, Mapping) else {}


def _profile(
    fmt: str,
    tables: Mapping[str, Any],
    name: str,
    keys: Mapping[str, str],
) -> DeviceProfile:
    """A :class:`DeviceProfile` from tables named by ``keys`` (role -> table name)."""

    def rows(role: str) -> list[Mapping[str, Any]]:
        value = tables.get(keys[role], [])
        return list(value) if _is_rows(value) else ([value] if isinstance(value, Mapping) else [])

    summary_rows = rows("summary")
    tool = SOURCE_PROFILE_SUMMARY.format(fmt=fmt)
    summary = summary_from_row(summary_rows[0], name, source_tool=tool) if summary_rows else None
    meta = _first(tables.get(keys["metadata"]))
    versions = {k: _text(meta[k]) for k in VERSION_FIELDS if _text(meta.get(k))}
    if summary is not None:
        versions = {**summary.versions, **versions}
    neffs = tuple(
        _text(r.get("network_name")) for r in rows("neff") if _text(r.get("network_name"))
    )
    warnings = tuple(
        f"{_text(r.get('category')) or 'warning'}: {_text(r.get('message'))}"
        for r in rows("warning")
        if _text(r.get("message"))
    )
    throttle = _throttle(rows("throttle")) or (dict(summary.throttle) if summary else {})
    return DeviceProfile(
        fmt=fmt,
        summary=summary,
        events=_events(rows("event")),
        executions=_executions(rows("execution")),
        neff_names=neffs,
        versions=versions,
        throttle=throttle,
        warnings=warnings,
    )


_JSON_KEYS = {
    "summary": "summary",
    "event": "instruction",
    "execution": "execution_info",
    "metadata": "metadata",
    "neff": "neff_header",
    "throttle": "throttle_summary",
    "warning": "warnings",
}
_PARQUET_KEYS = {
    "summary": "Summary",
    "event": EVENT_TABLE,
    "execution": "ExecutionInfo",
    "metadata": "Metadata",
    "neff": "NeffHeader",
    "throttle": "ThrottleSummary",
    "warning": "Warning",
}


def parse_explorer_json(data: Any, name: str) -> DeviceProfile:
    """Explorer JSON (``--output-format json``): a dict of row lists.

    Raises:
        FormatMismatch: ``data`` is not Explorer JSON.
    """
    if sniff(data) != EXPLORER_JSON:
        raise FormatMismatch(EXPLORER_JSON, sniff(data))
    return _profile(EXPLORER_JSON, data, name, _JSON_KEYS)


def parse_parquet_tables(
    tables: Mapping[str, Sequence[Mapping[str, Any]]], name: str
) -> DeviceProfile:
    """Parquet tables (table name -> rows, numbered splits already joined).

    Raises:
        FormatMismatch: no table of a device profile (no ``Summary`` nor ``Instruction``).
    """
    if not ({"Summary", "Instruction"} & set(tables)):
        found = ", ".join(sorted(tables)[:4]) or "no table"
        raise FormatMismatch(
            f"{PARQUET} device profile", f"Parquet without Summary or Instruction ({found})"
        )
    return _profile(PARQUET, tables, name, _PARQUET_KEYS)
