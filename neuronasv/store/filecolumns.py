"""One results file as the column model: :class:`FileColumns`, and its bytes.

:class:`FileColumns` is what :class:`neuronasv.store.columns.ColumnsParser` makes of a
results file and its sidecar. :func:`encode_file`/:func:`decode_file` are its bytes: what
the parse cache (:class:`neuronasv.store.histcache.ColumnsDiskCache`) stores per results
file, and what a worker process hands the main one
(:func:`neuronasv.store.columns.load_columns`): a JSON header line, then the arrays, then
a SHA-256 of everything before it, so a damaged entry never decodes; an entry of another
:data:`COLUMNS_FORMAT` is a miss, never a wrong value.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from neuronasv.model import RunSidecar, SeriesId

__all__ = [
    "COLUMNS_FORMAT",
    "FileColumns",
    "Layout",
    "Unstable",
    "content_digest",
    "decode_file",
    "decode_head",
    "encode_file",
]

#: (benchmark, params, the sidecar's SeriesId or None) per value of a file.
Layout = tuple[tuple[str, tuple[str, ...], "SeriesId | None"], ...]
#: (workload, shape, dtype) -> the targets counted twice with two numbers (a sidecar's
#: counts marked not deterministic; empty tuple: no target named).
Unstable = dict[tuple[str, str, str], tuple[str, ...]]


@dataclass
class FileColumns:
    """One results file (and its sidecar) as arrays.

    Attributes:
        values: one per layout entry; NaN where asv wrote NaN (skipped: no point) or
            ``null`` (failed, see ``failed``).
        failed: True where asv recorded a failure (the loader's point with no value).
        fingerprint: the sidecar's environment fingerprint (None without a readable one).
        unstable: the sidecar's pass counts that were not deterministic.
        q25, q75: asv's interquartile range per value (float32; NaN where asv has none).
        traces: the sidecar's trace paths (workload key -> path).
    """

    path: str
    machine: str
    commit: str
    env_name: str
    date: int | None
    layout_id: str
    values: np.ndarray
    failed: np.ndarray
    fingerprint: dict[str, str] | None = None
    unstable: Unstable = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    digest: str = ""  # content_digest of the bytes parsed (results file, then sidecar)
    q25: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    q75: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    traces: dict[str, str] = field(default_factory=dict)
    # What only the point view reads (``load_history``; ``ColumnsParser(points=True)``),
    # kept in memory, never in a cache entry: each value's samples, the sidecar, asv's
    # identity of the run.
    samples: list[tuple[float, ...]] | None = None
    sidecar: RunSidecar | None = None
    asv_env: dict[str, str] = field(default_factory=dict)


def content_digest(results: bytes, sidecar: bytes) -> str:
    """SHA-256 of a results file's and its sidecar's bytes (no sidecar: empty)."""
    h = hashlib.sha256()
    for data in (results, sidecar):
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


#: Bump when :class:`FileColumns`' encoding or meaning changes: old cache entries miss.
COLUMNS_FORMAT = 3  # 3: asv's quartiles and the sidecar's traces (the site reads them too)


def encode_file(fc: FileColumns) -> bytes:
    """A :class:`FileColumns` as bytes: a JSON header line, then the arrays, then a
    SHA-256 of everything before it (a damaged entry never decodes)."""
    head = {
        "format": COLUMNS_FORMAT,
        "path": fc.path,
        "machine": fc.machine,
        "commit": fc.commit,
        "env_name": fc.env_name,
        "date": fc.date,
        "layout": fc.layout_id,
        "n": int(fc.values.size),
        "fingerprint": fc.fingerprint,
        "unstable": [[list(k), list(v)] for k, v in sorted(fc.unstable.items())],
        "warnings": fc.warnings,
        "digest": fc.digest,
        "traces": fc.traces,
    }
    body = (
        json.dumps(head, separators=(",", ":")).encode()
        + b"\n"
        + fc.values.astype("<f8").tobytes()
        + fc.q25.astype("<f4").tobytes()
        + fc.q75.astype("<f4").tobytes()
        + np.packbits(fc.failed).tobytes()
    )
    return body + hashlib.sha256(body).digest()


_HEAD_DECODER = msgspec.json.Decoder()


def decode_head(raw: bytes) -> Any:
    """A JSON header line of ours (an entry's, a payload's) as ``json.loads`` gives it:
    msgspec first (3-5x faster; a cache hit decodes two per file), the stdlib for what
    msgspec refuses (a lone surrogate of an undecodable path, ``NaN``), with its errors."""
    try:
        return _HEAD_DECODER.decode(raw)
    except msgspec.DecodeError:
        return json.loads(raw)


def decode_file(raw: bytes, *, verified: bool = False) -> FileColumns:
    """:func:`encode_file`'s inverse.

    Args:
        raw: the bytes.
        verified: their integrity is already proven (a cache entry whose MAC verified:
            the checksum is not computed a second time).

    The arrays are read-only views of ``raw`` (no copy: a cache hit is decoded 1,000 times
    per run of a 1,000-commit history).

    Raises:
        ValueError: a checksum, format or size that does not match (a miss for a cache).
    """
    body, check = raw[:-32], raw[-32:]
    if len(raw) < 33 or not (verified or hashlib.sha256(body).digest() == check):
        raise ValueError("checksum")
    head_raw, _, arr = body.partition(b"\n")
    h = decode_head(head_raw)
    if not isinstance(h, dict) or h.get("format") != COLUMNS_FORMAT:
        raise ValueError("format")
    n = int(h["n"])
    if len(arr) != n * 16 + (n + 7) // 8:
        raise ValueError("payload size")
    return FileColumns(
        path=str(h["path"]),
        machine=str(h["machine"]),
        commit=str(h["commit"]),
        env_name=str(h["env_name"]),
        date=None if h["date"] is None else int(h["date"]),
        layout_id=str(h["layout"]),
        values=np.frombuffer(arr, "<f8", n).astype(np.float64, copy=False),
        failed=np.unpackbits(np.frombuffer(arr, np.uint8, offset=n * 16), count=n).view(bool),
        fingerprint=None if h["fingerprint"] is None else {
            str(k): str(v) for k, v in h["fingerprint"].items()
        },
        unstable={
            (str(k[0]), str(k[1]), str(k[2])): tuple(str(x) for x in v) for k, v in h["unstable"]
        },
        warnings=[str(w) for w in h["warnings"]],
        digest=str(h["digest"]),
        q25=np.frombuffer(arr, "<f4", n, n * 8).astype(np.float32, copy=False),
        q75=np.frombuffer(arr, "<f4", n, n * 12).astype(np.float32, copy=False),
        traces={str(k): str(v) for k, v in h["traces"].items()},
    )  # fmt: skip
