"""The site's output: the files under ``out`` and the manifest that makes a publish incremental.

A written file's input digest is kept in ``.neuronasv-manifest.json``; a file whose
digest is unchanged and still on disk is not rendered again (:class:`Writer`). The data
chunks (``m/<machine>/<group>/cNNNNN.js``, :func:`chunk_js`), the vendored assets and the
copied traces are written here; a folder that holds files no publish wrote is refused
(:func:`check_site_folder`), and a clean-up deletes only our own chunks
(:func:`is_own_chunk`). See :mod:`neuronasv.publish.site` for the layout.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from neuronasv.errors import UsageError
from neuronasv.fileio import confined_path, is_temp_of, write_atomic
from neuronasv.format import value_labels
from neuronasv.publish.render import script_json
from neuronasv.publish.sitedata import SiteData
from neuronasv.store.cachekey import KEY_SUFFIX

if TYPE_CHECKING:
    from neuronasv.publish.pages import Group
    from neuronasv.publish.workload import GroupSeries

__all__ = [
    "CHUNK",
    "PublishReport",
    "Writer",
    "check_site_folder",
    "chunk_count",
    "chunk_js",
    "copy_assets",
    "copy_traces",
    "is_own_chunk",
]

CHUNK = 1000  # commits per data file


# part of every digest: bump when the output format changes
# (site-2: every value's label in the data, comparison points, dates as text, "other" rows)
_FORMAT = "site-2"


_MANIFEST = ".neuronasv-manifest.json"


# What a site folder may hold before the manifest exists (a run that stopped early).
# (the default parse cache and the key file that signs it, beside it: store/cachekey.py)
_OWN_BEFORE_MANIFEST = frozenset(
    {".neuronasv-cache", ".neuronasv-cache" + KEY_SUFFIX, _MANIFEST + ".tmp"}
)


# The only files a clean-up may delete: data chunks as chunk_js names them.
_CHUNK_PATH = re.compile(r"m/[A-Za-z0-9._-]+/[A-Za-z0-9._-]+/c[0-9]{5}\.js")


_CHUNK_HEAD = b"NASV.chunk("


_ASSETS = ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE", "site.css", "site.js")


@dataclass
class PublishReport:
    """What a publish did (printed by the command; used by tests and the bench)."""

    written: list[str] = field(default_factory=list)
    skipped: int = 0
    pages: int = 0
    series: int = 0


def _ints(a: np.ndarray, scale: float) -> list[int | None]:
    q = np.rint(a.astype(np.float64) / scale)
    bad = ~np.isfinite(q)
    lst: list[int | None] = np.where(bad, 0, q).astype(np.int64).tolist()
    for i in np.flatnonzero(bad).tolist():
        lst[i] = None
    return lst


def _scale(a: np.ndarray) -> float:
    fin = np.abs(a[np.isfinite(a)])
    fin = fin[fin > 0]
    if not fin.size:
        return 1.0
    return float(10.0 ** (math.floor(math.log10(float(np.median(fin)))) - 4))


class Writer:
    """Writes files under ``out`` unless their recorded input digest is unchanged."""

    def __init__(self, out: str, report: PublishReport) -> None:
        self.out = out
        self.report = report
        self.path = os.path.join(out, _MANIFEST)
        try:
            with open(self.path, encoding="utf-8") as fh:
                old = json.load(fh)
            self.old: dict[str, str] = old if isinstance(old, dict) else {}
        except (OSError, ValueError):
            self.old = {}
        self.new: dict[str, str] = {}
        self.root = os.path.realpath(out)
        if not os.path.exists(self.path):
            # Mark the folder as the site's before anything else lands in it, so a run
            # that stops half-way leaves a folder the next publish recognises.
            self._dump({})

    def _dump(self, manifest: Mapping[str, str]) -> None:
        write_atomic(self.path, json.dumps(dict(manifest), sort_keys=True))

    def fresh(self, rel: str, digest: str) -> bool:
        """True (and remembered) when ``rel`` on disk already has this digest."""
        if self.old.get(rel) == digest and os.path.exists(os.path.join(self.out, rel)):
            self.new[rel] = digest
            self.report.skipped += 1
            return True
        return False

    def write(self, rel: str, text: str | bytes, digest: str | None = None) -> None:
        path = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        parent = os.path.realpath(os.path.dirname(path))
        if os.path.commonpath([self.root, parent]) != self.root:
            raise UsageError(f"refusing to write {rel}: its folder leads outside {self.out}")
        data = text.encode("utf-8") if isinstance(text, str) else text
        write_atomic(path, data)
        self.report.written.append(rel)
        if digest is not None:
            self.new[rel] = digest

    def close(self) -> None:
        self._dump(self.new)


#: What a trace path from a sidecar may look like to be copied or linked: plain folder and
#: file names (``<machine>/<hash8>/<stem>.json.gz``), nothing that climbs or hides.
_TRACE_PART = r"[A-Za-z0-9_][A-Za-z0-9._+@-]{0,199}"


_TRACE_PATH = re.compile(rf"{_TRACE_PART}(/{_TRACE_PART}){{0,7}}")


def copy_traces(w: Writer, data: SiteData, traces_dir: str) -> set[str]:
    """Copy every trace a sidecar names from ``traces_dir`` into the site's ``traces/``.

    Returns the paths copied (or already there unchanged). A path that is not plain
    (:data:`_TRACE_PATH`), a missing file or a path through a symbolic link is skipped.
    """
    root = os.path.realpath(traces_dir)
    done: set[str] = set()
    for md in data.machines:
        for per_commit in md.traces.values():
            for rel in per_commit.values():
                if rel in done or not _TRACE_PATH.fullmatch(rel) or ".." in rel.split("/"):
                    continue
                # No symbolic link anywhere below the store is followed (fileio).
                src = confined_path(root, tuple(rel.split("/")))
                if src is None or not os.path.isfile(src):
                    continue
                st = os.stat(src)
                digest = f"trace\x00{st.st_size}\x00{st.st_mtime_ns}"
                dest = f"traces/{rel}"
                if not w.fresh(dest, digest):
                    with open(src, "rb") as fh:
                        w.write(dest, fh.read(), digest)
                done.add(rel)
    return done


def check_site_folder(out: str | os.PathLike[str]) -> None:
    """Refuse to publish into a folder that holds files no ``neuronasv publish`` wrote.

    A folder is the site's when it does not exist yet, is empty, or holds the manifest an
    earlier publish left there. Anything else (a checkout, a folder with its own
    ``index.html``) would have files overwritten or deleted: :class:`UsageError`.
    """
    path = os.fspath(out)
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise UsageError(f"--out {path} exists and is not a folder")
    if os.path.isfile(os.path.join(path, _MANIFEST)):
        return
    names = os.listdir(path)
    foreign = sorted(n for n in names if n not in _OWN_BEFORE_MANIFEST)
    foreign = [n for n in foreign if not is_temp_of(n, _MANIFEST)]  # a write cut short
    if foreign:
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise UsageError(
            f"--out {path} holds files neuronasv publish did not write ({shown});"
            " refusing to overwrite or delete them",
            hint="publish into a new or empty folder (or one an earlier publish wrote)",
        )


def is_own_chunk(outdir: str, rel: str) -> bool:
    """True when ``rel`` (a manifest key) is one of our data chunks inside ``outdir``."""
    if not _CHUNK_PATH.fullmatch(rel):
        return False
    root = os.path.realpath(outdir)
    path = os.path.realpath(os.path.join(outdir, rel))
    if os.path.commonpath([root, path]) != root or os.path.islink(os.path.join(outdir, rel)):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_CHUNK_HEAD)) == _CHUNK_HEAD
    except OSError:
        return False


def copy_assets(w: Writer) -> None:
    pkg = resources.files("neuronasv.publish") / "assets"
    for name in _ASSETS:
        data = (pkg / name).read_bytes()
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        rel = f"assets/{name}"
        if not w.fresh(rel, digest):
            w.write(rel, data, digest)


def chunk_count(commits: int) -> int:
    """Data files per group for ``commits`` commits (:data:`CHUNK` commits each, at least 1)."""
    return max(1, math.ceil(commits / CHUNK))


def date_texts(dates_ms: np.ndarray) -> list[str]:
    """Commit dates (ms since the epoch, 0 = unknown) as ``2026-01-02 10:33`` (UTC), or ""."""
    text = np.datetime_as_string(dates_ms.astype("datetime64[ms]"), unit="m", timezone="UTC")
    return ["" if ms == 0 else t[:16].replace("T", " ")
            for ms, t in zip(dates_ms.tolist(), text.tolist(), strict=True)]  # fmt: skip


def _unique_small(a: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(a, return_index=True, return_inverse=True)`` for integers in
    ``[0, n)``, without its sort (a chunk's rows hold label indices below a few thousand:
    a mark per label, then each label's first position; a third of the time)."""
    present = np.zeros(n, dtype=bool)
    present[a] = True
    ids = np.flatnonzero(present)
    remap = np.zeros(n, dtype=np.int64)
    remap[ids] = np.arange(ids.size)
    inv = remap[a]
    first = np.full(ids.size, a.size, dtype=np.int64)
    np.minimum.at(first, inv, np.arange(a.size))
    return ids, first, inv


def _chunk_labels(
    block: np.ndarray, units: Sequence[str], forced: list[dict[int, str]]
) -> list[tuple[list[str], np.ndarray, np.ndarray]]:
    """Each row of a chunk: (labels, label index per value of the row's ``v``+``q1``+``q3``
    — ``block``'s row —, each label's value). ``forced`` (per row, column -> text) puts the
    comparison's own text on its points.

    The values of every row sharing a unit are formatted by one
    :func:`~neuronasv.format.value_labels` call (a few dozen numpy operations a call:
    once per row, they were a third of a cold publish's rendering); each row then keeps the
    labels it uses, in the order of the chunk's (by value, as for one row alone).
    """
    out: dict[int, tuple[list[str], np.ndarray, np.ndarray]] = {}
    by_unit: dict[str, list[int]] = {}
    for i, unit in enumerate(units):
        by_unit.setdefault(unit, []).append(i)
    for unit, rows in by_unit.items():
        sub = block[rows]
        labels, flat = value_labels(sub, unit)
        index = flat.reshape(sub.shape)
        for r, i in enumerate(rows):
            idx, vals = index[r], sub[r]
            used = idx >= 0
            ids, first, inv = _unique_small(idx[used], len(labels))
            texts = [labels[j] for j in ids.tolist()]
            local = np.full(idx.shape, -1, dtype=np.int64)
            local[used] = inv.ravel()
            if not forced[i]:
                out[i] = (texts, local, vals[used][first])
                continue
            seen = {t: k for k, t in enumerate(texts)}
            for j, text in forced[i].items():
                k = seen.get(text)
                if k is None:
                    k = seen[text] = len(texts)
                    texts.append(text)
                local[j] = k
            rep = np.full(len(texts), np.nan)
            used = local >= 0
            if used.any():
                u, first = np.unique(local[used], return_index=True)
                rep[u] = vals[used][first]
            out[i] = (texts, local, rep)
    return [out[i] for i in range(len(units))]


def _idx_list(a: np.ndarray) -> list[int | None]:
    lst: list[int | None] = a.tolist()
    for i in np.flatnonzero(a < 0).tolist():  # no value: null
        lst[i] = None
    return lst


def chunk_js(g: Group, gs: GroupSeries, k: int) -> tuple[str, Callable[[], str]]:
    """(digest, render) of chunk ``k`` of group ``g`` drawn as ``gs``; rendering is deferred.

    The payload, per chart row (``gs``' rows): ``v`` the medians as integers × ``scale``
    (what the line is drawn at), ``vl``/``lo``/``hi`` indices into the row's ``labels``
    (the text of each median and quartile: :func:`neuronasv.format.value_labels`, or the
    comparison's own text at its two commits) and ``lv`` each label's value (integers ×
    ``scale``: where the band is drawn); ``dates`` as text. The script formats nothing.
    """
    md = g.machine
    lo_c, hi_c = k * CHUNK, min(len(md.commits), (k + 1) * CHUNK)
    m = hi_c - lo_c
    v, q1, q3 = gs.v[:, lo_c:hi_c], gs.q1[:, lo_c:hi_c], gs.q3[:, lo_c:hi_c]
    forced: list[dict[int, str]] = [{} for _ in range(v.shape[0])]
    for (pos, col), text in gs.forced.items():
        if lo_c <= col < hi_c:
            forced[pos][col - lo_c] = text
    hsh = hashlib.blake2b(digest_size=16)
    hsh.update(f"{_FORMAT}\x00{g.gid}\x00{k}\x00".encode())
    hsh.update("\n".join(md.commits[lo_c:hi_c]).encode())
    hsh.update("\x00".join(gs.units).encode())
    hsh.update(repr(sorted((p, c, t) for p, f in enumerate(forced) for c, t in f.items())).encode())
    for arr in (md.dates[lo_c:hi_c], v, q1, q3):
        hsh.update(np.ascontiguousarray(arr).tobytes())

    def make() -> str:
        scales = [_scale(v[i]) for i in range(v.shape[0])]
        labels, vl, lo, hi, lv = [], [], [], [], []
        rows = _chunk_labels(np.concatenate([v, q1, q3], axis=1), gs.units, forced)
        for s, (texts, idx, rep) in zip(scales, rows, strict=True):
            labels.append(texts)
            vl.append(_idx_list(idx[:m]))
            lo.append(_idx_list(idx[m : 2 * m]))
            hi.append(_idx_list(idx[2 * m :]))
            lv.append(_ints(rep, s))
        data = {
            "start": lo_c,
            "commits": [c[:12] for c in md.commits[lo_c:hi_c]],
            "dates": date_texts(md.dates[lo_c:hi_c]),
            "scale": scales,
            "v": [_ints(v[i], s) for i, s in enumerate(scales)],
            "labels": labels,
            "vl": vl,
            "lo": lo,
            "hi": hi,
            "lv": lv,
        }
        return f"NASV.chunk({script_json(g.gid)},{script_json(data)});\n"

    return hsh.hexdigest(), make
