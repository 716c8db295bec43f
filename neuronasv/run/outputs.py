"""What a commit's asv run leaves, read back for its sidecar.

* :func:`build_series`: every (benchmark, params) of asv's results file as a ``SeriesId``
  (from the suite's tags in asv's ``benchmarks.json``, never from parsing a name), and the
  combinations asv recorded as failed;
* :func:`read_profiles`: the suite's per-(workload, shape, dtype) outputs (profiles and
  failures) that ``setup_cache`` or the pre-pass wrote into ``NEURONASV_PROFILE_OUT``.

:mod:`neuronasv.run.asvrun` writes the sidecar from both.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Mapping
from typing import Any

from neuronasv.model import SeriesId, WorkloadProfile
from neuronasv.store.asvresults import AsvResultsReader, param_value

__all__ = ["build_series", "read_profiles"]


def build_series(
    results: Any,
    benchmarks: Mapping[str, Any],
    source: str = "asv results",
    marked: bool = False,
) -> tuple[list[SeriesId], dict[str, str]]:
    """Every (benchmark, params) of an asv results file as a ``SeriesId``, plus failures.

    ``results`` is the decoded results file (``AsvResultsReader.read_json``: ``source``
    its path, ``marked`` its NaN markers), read by the one asv results reader: its header
    and row shapes are checked as the loader checks them. ``benchmarks`` is asv's
    ``benchmarks.json`` of that run: the suite tags its benchmarks with
    ``neuronasv_workload`` / ``neuronasv_series`` (``total`` or ``op``), so no name is
    parsed. Other benchmarks get a plain ``SeriesId``. Failed combinations (asv ``null``,
    as opposed to ``NaN`` = skipped) are returned as ``{"bench(params)": "failed"}``.

    Raises:
        CorruptResultsError: not an asv results document, or a malformed row.
        SchemaVersionError: an asv results ``version`` other than 2.
    """
    reader = AsvResultsReader()
    h = reader.header(results, source, marked)
    series: list[SeriesId] = []
    failed: dict[str, str] = {}
    for name in sorted(h.results):
        _cols, combos, _key, values = reader.row_shape(name, h.results[name], h.columns, source)
        meta = benchmarks.get(name)
        tags = meta if isinstance(meta, Mapping) else {}
        for i, combo in enumerate(combos):
            series.append(_series_id(name, combo, tags))
            if values is None or values[i] is None:
                failed[f"{name}({', '.join(combo)})" if combo else name] = "failed"
    return series, failed


def _series_id(name: str, combo: tuple[str, ...], tags: Mapping[str, Any]) -> SeriesId:
    """A combination's identity: workload, shape, dtype (and op) for a tagged benchmark."""
    workload = tags.get("neuronasv_workload")
    if not isinstance(workload, str) or len(combo) < 2:
        return SeriesId(benchmark=name, params=combo)
    kind = tags.get("neuronasv_series")
    return SeriesId(
        benchmark=name,
        params=combo,
        workload=workload,
        shape=param_value(combo[0]),
        dtype=param_value(combo[1]),
        op=param_value(combo[2]) if kind == "op" and len(combo) >= 3 else None,
    )


def read_profiles(folder: str) -> tuple[list[WorkloadProfile], dict[str, str]]:
    """The suite's per-(workload, shape, dtype) outputs: profiles and failures."""
    profiles: list[WorkloadProfile] = []
    failures: dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            key = str(doc["key"])
            if "error" in doc:
                failures[key] = str(doc["error"])
            else:
                profiles.append(WorkloadProfile.from_json(doc["profile"], path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            failures[os.path.basename(path)] = f"unreadable profile output: {exc}"
    return profiles, failures
