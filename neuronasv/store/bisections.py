"""Bisection records beside the results: written by ``neuronasv bisect``, read by ``regressions``.

A record is a :class:`~neuronasv.model.bisect.BisectDocument` at
``<results>/<machine>/bisect-<key>.bisect`` (:func:`neuronasv.store.layout.bisect_file`);
the same search (machine, series, range) replaces its own record. The results branch
carries them like results (:func:`neuronasv.store.gitstore.collect_result_files`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from neuronasv.errors import NeuronasvError
from neuronasv.fileio import write_atomic
from neuronasv.model.bisect import BisectDocument
from neuronasv.store.layout import bisect_file, is_bisect_name

__all__ = ["load_bisections", "save_bisection"]


def save_bisection(results_dir: str, doc: BisectDocument) -> str:
    """Write ``doc`` as its machine's record; returns the path."""
    path = bisect_file(results_dir, doc.machine, doc.key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, doc.dumps())
    return path


def load_bisections(
    results_dir: str, machines: Iterable[str] | None = None
) -> tuple[list[BisectDocument], list[str]]:
    """Every readable record under ``results_dir`` (``machines``: only those folders).

    Returns:
        ``(records, errors)``: an unreadable record is named in ``errors`` ("path: reason")
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
        if m.startswith(".") or (wanted is not None and m not in wanted) or not os.path.isdir(mdir):
            continue
        for name in sorted(os.listdir(mdir)):
            path = os.path.join(mdir, name)
            if not is_bisect_name(name) or os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    doc = BisectDocument.loads(fh.read(), source=path)
            except (OSError, UnicodeDecodeError, NeuronasvError) as exc:
                msg = str(exc)
                errors.append(msg if msg.startswith(path) else f"{path}: {msg}")
                continue
            if doc.machine != m:
                errors.append(f"{path}: a record of machine {doc.machine!r} in {m!r}'s folder")
                continue
            docs.append(doc)
    return docs, errors
