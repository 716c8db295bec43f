"""The caches of ``neuronasv regressions``: a new commit costs one parsed file and the
windows it touches, and a stale, damaged or planted cache costs time, never an answer.

**Trust** (issue 38 item 2): every entry is keyed by what it was computed from and carries
an HMAC-SHA256 under a key that is never in the cache folder
(:mod:`neuronasv.store.cachekey`: ``NEURONASV_CACHE_KEY``, else a key file beside the
folder); an entry whose MAC does not verify is a miss. Only regular files are read
(``O_NOFOLLOW``, ``O_NONBLOCK``: a FIFO planted where an entry is expected cannot hang a
run; :func:`neuronasv.fileio.read_regular`), each with a size bound; entries are written
only where no folder on the way is a symbolic link, and pruning removes names inside the
explanations folder it opened without following a link (a planted link costs nothing
outside the cache).

**Parsed files** (:class:`ColumnsDiskCache`): per results file, its
:class:`~neuronasv.store.columns.FileColumns`, offered only while the results file and its
sidecar hash (SHA-256) to what they hashed when parsed (the hash is skipped only for
files whose inode and ctime show they were not written since, as git's index does). The
entry itself carries a checksum (a damaged one is a miss).

**Search windows** (:class:`WindowCache`): per series, each search window's change-point
candidates and the values they were found in.

**Culprit explanations** (:class:`ExplanationCache`): per one-commit change point, the
comparison of its commit with its first parent kept to the series' configuration (what
:func:`neuronasv.analyse.culprits.explain_pair` returns). An entry's name is the SHA-256
of everything the answer depends on: the package version, the machine, the two commits,
the series, and the content digests of every results file and sidecar the comparison
reads; its body carries its own checksum. A run keeps the entries it used and removes
the others, so the folder holds at most one run's explanations.

The first pass of the search (:func:`neuronasv.analyse.edivisive.window_candidates`, the
O(window²) part) examines each window of a series on its own: a window's candidates are a
function of its values, the window size and the p-value. A new commit appends a value:
only the last window or two of each series change. This cache keeps, per machine, every
series' values and window candidates from the last run, and offers a window again only
when it is provably the same search:

* the file is read only when its SHA-256 checksum, format, algorithm version, machine
  and settings (window, p-value) all match; anything else (damaged, truncated, foreign,
  written by another version) is ignored, never an error;
* a series' window is offered only when it spans the same points as now and the values
  up to its end are identical, bit for bit, to the cached ones (a changed, removed,
  re-ordered or newly unstable commit re-examines its window and every later one).

So a stale or damaged cache costs time, never an answer (``tests/store/test_histcache.py``).
The pruning pass runs over whole series every time (linear, and cheap).

File: ``<directory>/<machine hash>.cpcache``: a JSON header line, the values (float64),
then the checksum of both.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from neuronasv.fileio import confined_path, read_regular, write_atomic
from neuronasv.store.cachekey import CacheKey
from neuronasv.store.filecolumns import (
    FileColumns,
    content_digest,
    decode_file,
    decode_head,
    encode_file,
)
from neuronasv.store.layout import sidecar_path
from neuronasv.store.packstore import INDEX_NAME, PackStore

__all__ = [
    "ALGORITHM",
    "ColumnsDiskCache",
    "ExplanationCache",
    "SeriesKey",
    "WindowCache",
    "file_digest",
    "file_stat",
]

#: The search's version: bump when window_candidates can give another answer.
ALGORITHM = "edivisive-1"
#: 2: every entry signed (an HMAC under the cache key, not a checksum)
_FORMAT = 2

#: Size bounds of what is read back: far above any entry of ours.
MAX_COLUMNS_ENTRY = 256 << 20
MAX_WINDOW_FILE = 2 << 30
MAX_EXPLANATION = 64 << 20


class _Folders:
    """Where a cache writes: ``root/folders.../name`` when no folder on the way is a
    symbolic link (made when missing; each folder checked once per run). The entry itself
    is replaced by a rename, which never writes through a link."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.checked: dict[tuple[str, ...], str | None] = {}

    def path(self, *parts: str) -> str | None:
        """The path to write ``parts`` at, or None (it is not written)."""
        folders, name = parts[:-1], parts[-1]
        if folders not in self.checked:
            try:
                os.makedirs(self.root, exist_ok=True)
                root = os.path.realpath(self.root)
                ok = confined_path(root, (*folders, name), create=True) is not None
                self.checked[folders] = os.path.join(root, *folders) if ok else None
            except OSError:
                self.checked[folders] = None
        folder = self.checked[folders]
        return None if folder is None else os.path.join(folder, name)

SeriesKey = tuple[str, str, str, tuple[str, ...]]


def file_digest(path: str) -> str:
    """:func:`~neuronasv.store.filecolumns.content_digest` of a results file and its sidecar
    as they are on disk now (an absent sidecar hashes as empty)."""
    parts: list[bytes] = []
    for p in (path, sidecar_path(path)):
        try:
            with open(p, "rb") as fh:
                parts.append(fh.read())
        except FileNotFoundError:
            parts.append(b"")
    return content_digest(*parts)


def file_stat(path: str) -> list[int]:
    """The one stat rule of a cached parse: (device, inode, size, mtime_ns, ctime_ns) of a
    results file and of its sidecar (zeros for one that is absent)."""
    out: list[int] = []
    for p in (path, sidecar_path(path)):
        try:
            st = os.stat(p)
            out += [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        except FileNotFoundError:
            out += [0, 0, 0, 0, 0]
    return out


#: A file changed less than this before it was hashed may change again within the same
#: timestamp tick unseen (git's "racily clean" entries): its stat is not trusted.
RACY_NS = 2_000_000_000


class ColumnsDiskCache:
    """Parsed results files (``FileColumns``) under ``<directory>/columns``.

    Entries, one per results file, kept by the absolute path in the folder's packs
    (:mod:`neuronasv.store.packstore`: a run appends its entries to one file and writes
    one index, instead of creating a file per entry): a JSON header line (format, path,
    the content digest of the bytes parsed, the files' stat when hashed and when), then
    :func:`~neuronasv.store.filecolumns.encode_file`'s bytes, then the HMAC of both under
    ``key`` (an entry that does not verify, or names another path, is a miss). A run's
    entries are found by later runs once :meth:`flush` (``load_columns`` calls it; the end
    of :meth:`writing_behind` too) has written the index.

    An entry is used when the results file and sidecar hash to its digest. The hash is
    skipped only when both files' (device, inode, size, mtime, ctime) are what they were
    when hashed and neither had changed within :data:`RACY_NS` before that: any write
    since moves the ctime, which no tool can set back. A fresh checkout (new inodes) is
    hashed, and on a match the entry's stat is brought up to date. Unreadable, foreign or
    outdated entries are misses.
    """

    def __init__(self, directory: str, key: CacheKey) -> None:
        self.folders = _Folders(directory)
        self.directory = os.path.join(directory, "columns")
        self.packs = PackStore(self.directory, self._writable)
        #: where the layouts its entries name are kept (``load_columns(layouts_dir=...)``)
        self.layouts_dir = os.path.join(directory, "layouts")
        self.key = key
        self.hits = 0
        self.hashed = 0
        self.misses = 0
        self.writes = 0
        self.failed_writes = 0
        #: path -> (time.time_ns(), file_stat) of a file :meth:`get` missed, taken then
        self.missed: dict[str, tuple[int, list[int]]] = {}
        self._lock = threading.Lock()  # the folders' check and the counters, for writers
        self._behind: list[Future[None]] | None = None
        self._pool: ThreadPoolExecutor | None = None

    @contextlib.contextmanager
    def writing_behind(self, threads: int = 4) -> Iterator[ColumnsDiskCache]:
        """Within the block :meth:`put` checks an entry at once and hands its write (the
        encoding, the MAC, the file's creation: mostly waiting on the disk, which other
        work on the machine can make milliseconds per file) to ``threads`` threads; every
        write is done, and any error but a failed write raised, when the block ends. No
        process may be forked inside the block (a thread may hold a lock)."""
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="neuronasv-cache")
        self._behind = []
        try:
            yield self
        finally:
            pool, done, self._pool, self._behind = self._pool, self._behind, None, None
            pool.shutdown(wait=True)
            self.packs.flush()
            for f in done:
                f.result()

    def flush(self) -> None:
        """Make the entries written so far findable by later runs (one index written; see
        :mod:`neuronasv.store.packstore`). Inside :meth:`writing_behind` the block's end
        does it, once every write is done."""
        if self._pool is None:
            self.packs.flush()

    def _writable(self) -> str | None:
        with self._lock:
            got = self.folders.path("columns", INDEX_NAME)
        return None if got is None else os.path.dirname(got)

    def get(self, path: str) -> FileColumns | None:
        """The parsed form of ``path`` when its content is what was parsed, else None."""
        try:
            raw = self.packs.read(os.path.abspath(path))
            if raw is None:
                raise ValueError("no entry")
            body, mac = raw[: -CacheKey.SIZE], raw[-CacheKey.SIZE :]
            head_raw, _, payload = body.partition(b"\n")
            if len(raw) <= CacheKey.SIZE or not self.key.verify(mac, b"columns", head_raw,
                                                                 payload):  # fmt: skip
                raise ValueError("not signed with this cache's key")
            head = decode_head(head_raw)
            if (
                not isinstance(head, dict)
                or head.get("format") != _FORMAT
                or head.get("path") != os.path.abspath(path)
            ):
                raise ValueError("another entry")
            got = decode_file(payload, verified=True)  # the MAC covers it
            if got.digest != head.get("digest"):
                raise ValueError("digest")
            now = file_stat(path)
            checked = int(head["checked"])
            if not (now == head.get("stat") and max(now[4], now[9]) + RACY_NS < checked):
                before = file_stat(path)
                same = file_digest(path) == got.digest
                after = file_stat(path)
                if not same:
                    raise ValueError("stale")
                self.hashed += 1
                if before == after:
                    self._write(path, got, payload, before)
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1
            self.missed[path] = (time.time_ns(), file_stat(path))
            return None
        self.hits += 1
        return got

    def put(self, path: str, parsed: FileColumns) -> None:
        """Store ``parsed`` for ``path`` when the files on disk are still what was parsed (a
        file changed since is not stored: the next run parses it again).

        A file :meth:`get` missed was stat'ed then, before it was parsed: when it stats the
        same now, nothing changed while the parser read it, and the entry is written without
        reading and hashing the files a second time (``checked`` is the time of that stat,
        for :data:`RACY_NS`); otherwise they are hashed.
        """
        if not parsed.digest:
            return
        now = file_stat(path)
        seen = self.missed.pop(path, None)
        checked = seen[0] if seen is not None and seen[1] == now else None
        if checked is None and (file_digest(path) != parsed.digest or file_stat(path) != now):
            return
        if self._pool is not None and self._behind is not None:
            self._behind.append(self._pool.submit(self._write, path, parsed, None, now, checked))
        else:
            self._write(path, parsed, None, now, checked)

    def _write(
        self, path: str, parsed: FileColumns, payload: bytes | None, stat: list[int],
        checked: int | None = None,
    ) -> None:  # fmt: skip
        head = {
            "format": _FORMAT,
            "path": os.path.abspath(path),
            "digest": parsed.digest,
            "stat": stat,
            "checked": time.time_ns() if checked is None else checked,
        }
        if payload is None:
            payload = encode_file(parsed)
        head_raw = json.dumps(head).encode()
        try:
            mac = self.key.sign(b"columns", head_raw, payload)
            self.packs.append(os.path.abspath(path), head_raw + b"\n" + payload + mac)
        except OSError:
            with self._lock:
                self.failed_writes += 1  # a cache that cannot be written costs time only
            return
        with self._lock:
            self.writes += 1


@dataclass(frozen=True)
class _Entry:
    values: np.ndarray
    windows: Mapping[int, tuple[int, tuple[int, ...]]]  # start -> (end, candidates)


class WindowCache:
    """One machine's window candidates for one (window, p-value), on disk.

    Args:
        directory: where the cache files live (created on save).
        machine: the asv machine.
        window, max_pvalue: the search settings (part of the key).
        key: signs the file (one that does not verify is not read).
    """

    def __init__(
        self, directory: str, machine: str, window: int, max_pvalue: float, key: CacheKey
    ) -> None:
        self.directory = directory
        self.key = key
        self.machine = machine
        self.settings = {"window": max(8, window), "max_pvalue": max_pvalue}
        name = hashlib.sha256(machine.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        self.path = os.path.join(directory, name + ".cpcache")
        self.entries: dict[SeriesKey, _Entry] = {}
        self.reused = 0  # windows offered again (for the command's line)
        self.searched = 0  # windows searched
        self.fresh: dict[SeriesKey, _Entry] = {}

    def _header(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "algorithm": ALGORITHM,
            "machine": self.machine,
            "settings": self.settings,
        }

    def load(self) -> WindowCache:
        """Read the file when it is this cache's and intact; otherwise start empty."""
        self.entries = {}
        try:
            raw = read_regular(self.path, MAX_WINDOW_FILE)
        except OSError:
            return self
        try:
            self.entries = _decode(raw, self._header(), self.key)
        except (ValueError, KeyError, TypeError, IndexError):
            self.entries = {}
        return self

    def known(self, key: SeriesKey, values: np.ndarray) -> dict[int, tuple[int, ...]]:
        """The cached windows of series ``key`` that are the same search as now."""
        e = self.entries.get(key)
        if e is None:
            return {}
        now = np.ascontiguousarray(values, dtype=np.float64)
        m = min(now.size, e.values.size)
        same = now[:m].view(np.int64) == e.values[:m].view(np.int64)
        first_diff = m if bool(same.all()) else int(np.argmin(same))
        w = int(self.settings["window"])
        # a window [start, end) is the same search when its values are and it spans the
        # same points now (a window cut short by the series' end grows with a new commit)
        return {
            start: cands
            for start, (end, cands) in e.windows.items()
            if end <= first_diff and end == min(now.size, start + w)
        }

    def record(self, key: SeriesKey, values: np.ndarray, found: Mapping[int, tuple[int, ...]],
               reused: int = 0) -> None:  # fmt: skip
        """This run's windows of series ``key`` (all of them: known ones included)."""
        n, w = len(values), int(self.settings["window"])
        wins = {s: (min(n, s + w), tuple(c)) for s, c in found.items()}
        self.fresh[key] = _Entry(np.array(values, dtype=np.float64), wins)
        self.reused += reused
        self.searched += len(found) - reused

    def save(self) -> str | None:
        """Write this run's entries (replacing the file; series not seen are dropped).

        Returns:
            None, or why the file could not be written (a cache costs time only).
        """
        try:
            os.makedirs(self.directory, exist_ok=True)
            write_atomic(self.path, _encode(self.fresh, self._header(), self.key))
        except OSError as exc:
            return f"{self.path}: {exc.strerror or exc}"
        return None


def _encode(
    entries: Mapping[SeriesKey, _Entry], header: Mapping[str, Any], key: CacheKey
) -> bytes:
    """Header line (the settings, the series keys), then little-endian arrays: per series
    its value count and window count; the values; per window start, end, candidate
    count; the candidates. Then the HMAC of everything before it under ``key``."""
    keys = sorted(entries)
    head = json.dumps(
        {**header, "series": [[k[0], k[1], k[2], list(k[3])] for k in keys]},
        separators=(",", ":"),
    ).encode()
    counts: list[int] = []
    wins: list[int] = []
    cands: list[int] = []
    vals: list[np.ndarray] = []
    for k in keys:
        e = entries[k]
        counts += [e.values.size, len(e.windows)]
        vals.append(e.values.astype("<f8"))
        for start, (end, cs) in sorted(e.windows.items()):
            wins += [start, end, len(cs)]
            cands += cs
    arrays = [
        np.array([len(keys), len(wins) // 3, len(cands)], dtype="<i8"),
        np.array(counts, dtype="<i8"),
        np.concatenate(vals) if vals else np.zeros(0, "<f8"),
        np.array(wins, dtype="<i8"),
        np.array(cands, dtype="<i8"),
    ]
    body = head + b"\n" + b"".join(a.tobytes() for a in arrays)
    return body + key.sign(b"windows", body)


def _decode(
    raw: bytes, expect: Mapping[str, Any], signer: CacheKey
) -> dict[SeriesKey, _Entry]:
    body, mac = raw[: -CacheKey.SIZE], raw[-CacheKey.SIZE :]
    if len(raw) <= CacheKey.SIZE or not signer.verify(mac, b"windows", body):
        raise ValueError("not signed with this cache's key")
    head_raw, _, data = body.partition(b"\n")
    head = json.loads(head_raw)
    if any(head.get(k) != v for k, v in expect.items()):
        raise ValueError("another cache")
    n_series, n_wins, n_cands = (int(x) for x in np.frombuffer(data, "<i8", 3))
    if len(head["series"]) != n_series:
        raise ValueError("series")
    at = 24
    counts = np.frombuffer(data, "<i8", 2 * n_series, at).reshape(-1, 2)
    at += counts.nbytes
    n_vals = int(counts[:, 0].sum())
    if (counts < 0).any() or int(counts[:, 1].sum()) != n_wins:
        raise ValueError("counts")
    vals = np.frombuffer(data, "<f8", n_vals, at)
    at += vals.nbytes
    wins = np.frombuffer(data, "<i8", 3 * n_wins, at).reshape(-1, 3)
    at += wins.nbytes
    cands = np.frombuffer(data, "<i8", n_cands, at).tolist()
    if at + n_cands * 8 != len(data) or int(wins[:, 2].sum()) != n_cands:
        raise ValueError("size")
    out: dict[SeriesKey, _Entry] = {}
    v_at = w_at = c_at = 0
    win_rows = wins.tolist()
    for (machine, env, bench, params), (nv, nw) in zip(head["series"], counts.tolist(),
                                                      strict=True):  # fmt: skip
        key: SeriesKey = (str(machine), str(env), str(bench), tuple(str(p) for p in params))
        per: dict[int, tuple[int, tuple[int, ...]]] = {}
        for start, end, nc in win_rows[w_at : w_at + nw]:
            per[start] = (end, tuple(cands[c_at : c_at + nc]))
            c_at += nc
        w_at += nw
        out[key] = _Entry(vals[v_at : v_at + nv].astype(np.float64), per)
        v_at += nv
    return out


_ENTRY = re.compile(r"[0-9a-f]{64}\.json")


class ExplanationCache:
    """Explanations of one-commit change points under ``<directory>/explanations``.

    :meth:`key` names an explanation by what it depends on (see the module doc);
    :meth:`get` offers an entry only when its MAC under ``signer`` verifies for that name
    (a recomputed checksum is no MAC: a writer of the folder cannot make one);
    :meth:`prune` removes the entries this run did not ask for, inside the folder only. A
    cache that cannot be read or written costs time, never an answer.
    """

    def __init__(self, directory: str, version: str, signer: CacheKey) -> None:
        self.folders = _Folders(directory)
        self.directory = os.path.join(directory, "explanations")
        self.version = version
        self.signer = signer
        self.used: set[str] = set()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def digests(files: Iterable[str]) -> list[str]:
        """The content digests of ``files`` (results files, each with its sidecar)."""
        return sorted(file_digest(p) for p in files)

    def key(self, pair: tuple[str, str, str], series: Any, digests: list[str]) -> str:
        """The entry name of ``series``' (JSON) explanation of ``pair`` (machine, parent,
        commit) whose comparison reads the files of ``digests`` (:meth:`digests`)."""
        text = json.dumps([_FORMAT, self.version, list(pair), series, digests])
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + ".json")

    def get(self, key: str) -> dict[str, Any] | None:
        """The explanation stored under ``key``, or None (absent, damaged, foreign)."""
        self.used.add(key)
        try:
            entry = json.loads(read_regular(self._path(key), MAX_EXPLANATION))
            body = json.dumps(entry["explanation"], sort_keys=True)
            mac = bytes.fromhex(str(entry.get("mac")))
            if (
                entry.get("format") != _FORMAT
                or entry.get("key") != key
                or not isinstance(entry["explanation"], dict)
                or not self.signer.verify(mac, b"explanation", key.encode(), body.encode())
            ):
                raise ValueError("another entry")
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            self.misses += 1
            return None
        self.hits += 1
        return dict(entry["explanation"])

    def put(self, key: str, explanation: Mapping[str, Any]) -> None:
        """Store ``explanation`` under ``key`` (a failed write is ignored)."""
        self.used.add(key)
        body = json.dumps(explanation, sort_keys=True)
        mac = self.signer.sign(b"explanation", key.encode(), body.encode())
        entry = {"format": _FORMAT, "key": key, "explanation": explanation, "mac": mac.hex()}
        path = self.folders.path("explanations", key + ".json")
        try:
            if path is not None:
                write_atomic(path, json.dumps(entry).encode())
        except OSError:
            return

    def prune(self) -> None:
        """Remove this cache's entries that this run did not use: names of its own form,
        inside the folder opened without following a link (a planted ``explanations``
        link to another folder is not pruned through), never a folder."""
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.directory, flags)
        except OSError:
            return
        try:
            for name in os.listdir(fd):
                if _ENTRY.fullmatch(name) and name[:-5] not in self.used:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)
