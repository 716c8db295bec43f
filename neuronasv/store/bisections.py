"""Bisection records beside the results: written by ``neuronasv bisect``, read by ``regressions``.

A record is a :class:`~neuronasv.model.bisect.BisectDocument` at
``<results>/<machine>/bisect-<key>.bisect`` (:func:`neuronasv.store.layout.bisect_file`);
the same search (machine, series, range) replaces its own record. The results branch
carries them like results (:func:`neuronasv.store.gitstore.collect_result_files`).

A record is untrusted data (anyone who can push to the results branch writes one; CI
uploads them from a self-hosted runner): :func:`read_record` believes one only when it is a
regular file of at most :data:`MAX_RECORD_BYTES`, passes its schema (every commit a full
hash, ``alpha`` a probability, counts >= 0: :mod:`neuronasv.model.bisect`), lies in its own
machine's folder and under its own key's name. Whether its commits exist is the
repository's to say (:func:`named_commits`; ``regressions`` asks git before it attaches one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from neuronasv.errors import CorruptResultsError, NeuronasvError
from neuronasv.fileio import read_regular, write_atomic
from neuronasv.model.bisect import BisectDocument
from neuronasv.store.layout import bisect_file, is_bisect_name

__all__ = [
    "MAX_RECORD_BYTES",
    "load_bisections",
    "named_commits",
    "read_record",
    "save_bisection",
]

#: A record holds every sample its rounds took; far below this (a few MB at most).
MAX_RECORD_BYTES = 64 << 20


def save_bisection(results_dir: str, doc: BisectDocument) -> str:
    """Write ``doc`` as its machine's record; returns the path."""
    path = bisect_file(results_dir, doc.machine, doc.key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, doc.dumps())
    return path


def read_record(path: str, machine: str) -> BisectDocument:
    """The record at ``path`` in ``machine``'s folder, checked as untrusted data (see the
    module doc).

    Raises:
        CorruptResultsError: why it is not believed, naming ``path`` (exit 5).
    """
    try:
        raw = read_regular(path, MAX_RECORD_BYTES)
        doc = BisectDocument.loads(raw.decode("utf-8"), source=path)
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CorruptResultsError(f"{path}: {why}") from None
    if doc.machine != machine:
        raise CorruptResultsError(f"{path}: a record of machine {doc.machine!r} in {machine!r}'s"
                                  " folder")  # fmt: skip
    if os.path.basename(path) != os.path.basename(bisect_file("", machine, doc.key)):
        raise CorruptResultsError(f"{path}: the record's key is {doc.key}, not its file name's")
    return doc


def named_commits(doc: BisectDocument) -> set[str]:
    """Every commit a record names: its range, its answer, its probes and rounds."""
    c = doc.result
    return {doc.good, doc.bad, c.lo, c.hi, *([c.commit] if c.commit else []),
            *(p.commit for p in doc.probes), *(m.commit for m in doc.measurements)}  # fmt: skip


def load_bisections(
    results_dir: str, machines: Iterable[str] | None = None
) -> tuple[list[BisectDocument], list[str]]:
    """Every record under ``results_dir`` that :func:`read_record` believes (``machines``:
    only those folders).

    Returns:
        ``(records, errors)``: a record not believed is named in ``errors`` ("path: reason")
        and skipped; it never stops the caller.
    """
    wanted = set(machines) if machines is not None else None
    docs: list[BisectDocument] = []
    errors: list[str] = []
    try:
        folders = sorted(os.listdir(results_dir))
    except OSError:
        return docs, errors
    for m in folders:
        mdir = os.path.join(results_dir, m)
        if m.startswith(".") or (wanted is not None and m not in wanted):
            continue
        if os.path.islink(mdir) or not os.path.isdir(mdir):
            continue
        for name in sorted(os.listdir(mdir)):
            if not is_bisect_name(name):
                continue
            path = os.path.join(mdir, name)
            try:
                docs.append(read_record(path, m))
            except NeuronasvError as exc:
                errors.append(str(exc))
    return docs, errors
