"""The trace store: pick the flagged workloads' traces of a comparison into a folder.

``neuronasv run`` keeps one gzipped chrome trace per workload at
``<traces_dir>/<machine>/<hash8>/<stem>.json.gz`` (and, on Neuron, the ``<stem>/`` trace
folder with the NTFF/NEFF files beside it). The PR workflow uploads only the traces a
reviewer needs: those of the workloads the comparison flagged
(:func:`neuronasv.report.traces.flagged_workloads`), laid out as
``<out>/<side>-<hash8>/...`` (:func:`neuronasv.report.traces.trace_path`), the layout the
comment's links name.

    python -m neuronasv.ci traces --findings F --traces-dir D --machine M --out O

(the ``traces`` step of :mod:`neuronasv.ci`; the ``pr-bench`` step calls
:func:`pick_traces` itself). Exit codes: 0 (also when nothing is flagged or no trace
exists: a comparison without traces is not an error), 2 usage, 5 unreadable findings.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass

from neuronasv.errors import CorruptResultsError, UsageError
from neuronasv.fileio import confined_path, copy_regular_files
from neuronasv.model import FindingsDocument
from neuronasv.report.traces import flagged_workloads, trace_path
from neuronasv.store.layout import trace_parts

__all__ = ["Picked", "copied_line", "pick_flagged_traces", "pick_traces"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Picked:
    """What :func:`pick_flagged_traces` did."""

    copied: tuple[str, ...]  # paths written under ``out`` (relative)
    missing: tuple[str, ...]  # trace files the store did not have (relative to the store)


def pick_flagged_traces(doc: FindingsDocument, traces_dir: str, machine: str, out: str) -> Picked:
    """Copy base and head traces of every flagged workload of ``doc`` into ``out``.

    Confined: the commits must be hex hashes, no symbolic link below the store is
    followed (machine folder, commit folder, trace file, anything in a Neuron trace
    folder), every path read resolves inside ``traces_dir`` and every path written
    inside ``out``; only regular files are copied.

    Raises:
        UsageError: ``doc`` is not a comparison (no base or head), or ``machine`` is not a
            plain folder name.
        CorruptResultsError: a commit of ``doc`` is not a hex hash.
    """
    if doc.base is None or doc.head is None:
        raise UsageError("the findings are not a comparison of two commits")
    if not machine or machine in (".", "..") or os.sep in machine or "/" in machine:
        raise UsageError(f"machine {machine!r} is not a folder name")
    for ref in (doc.base, doc.head):
        if not _HEX.fullmatch(ref.commit):
            raise CorruptResultsError(f"the findings' commit {ref.commit[:50]!r} is not a hex hash")
    store = os.path.realpath(traces_dir)
    os.makedirs(out, exist_ok=True)
    dest_root = os.path.realpath(out)
    copied: list[str] = []
    missing: list[str] = []
    for fw in flagged_workloads(doc):
        for side, ref in (("base", doc.base), ("head", doc.head)):
            rel = trace_path(side, ref.commit, fw.workload, fw.shape, fw.dtype)
            parts = (*trace_parts(machine, ref.commit), rel.split("/", 1)[1])
            src = confined_path(store, parts)
            if src is None or not os.path.isfile(src):
                missing.append(os.path.join(*parts))
                continue
            dest = confined_path(dest_root, tuple(rel.split("/")), create=True)
            if dest is None:
                missing.append(os.path.join(*parts))
                continue
            shutil.copyfile(src, dest)
            copied.append(rel)
            # Neuron: the profiler's trace folder (NTFF, NEFF) sits beside the chrome trace.
            folder = src[: -len(".json.gz")]
            if os.path.isdir(folder) and not os.path.islink(folder):
                copy_regular_files(folder, dest[: -len(".json.gz")])
                copied.append(rel[: -len(".json.gz")] + "/")
    return Picked(tuple(copied), tuple(missing))


_HEX = re.compile(r"[0-9a-fA-F]{7,64}")


def copied_line(picked: Picked, out: str) -> str:
    """The ``traces`` step's result: how many traces were copied where."""
    return f"{len(picked.copied)} trace(s) of flagged workloads copied to {out}"


def pick_traces(findings: str, traces_dir: str, machine: str, out: str) -> Picked:
    """:func:`pick_flagged_traces` of the findings file, each missing trace a warning
    (:func:`copied_line` says how many were copied)."""
    from neuronasv.report.load import load_findings

    doc = load_findings(findings)
    picked = pick_flagged_traces(doc, traces_dir, machine, out)
    for m in picked.missing:
        log.warning(f"no trace for {m}")
    return picked
