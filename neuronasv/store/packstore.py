"""Many small cache records in a few files: append-only packs and one index.

The parse cache (:class:`neuronasv.store.histcache.ColumnsDiskCache`) keeps one record per
results file. Written one file per record, a cold publish at 1,000 commits created a
thousand files (and 256 folders): on the 2-core runner we measure on, creating a file
costs 0.1–0.8 ms of kernel time, so the cache cost about a third of a cold publish's wall
(``docs/publishing.md``), and a CI cache of 10,000 small files is slow to save and restore.
Here a run appends its records to one new *pack* and, at :meth:`PackStore.flush`, writes
one *index* (key -> pack, offset, length); a read is one ``pread`` on a pack kept open.

What is stored is not trusted here: a record must carry its own proof (the parse cache
signs each record and names its path inside it), so a damaged, foreign or planted index
or pack costs a miss, never an answer. This module only guarantees that:

* it reads nothing but regular files inside its folder (``O_NOFOLLOW``, ``O_NONBLOCK``:
  a link or a FIFO planted as the index or a pack is a miss, never a hang), and only pack
  names of its own form (``p-<32 hex>.pack``; an index cannot point elsewhere);
* it writes and removes only where no folder on the way is a symbolic link (``writable``
  is decided by the caller's check), and removes only its own names;
* a record is findable by another process only after the index naming it is written
  whole (a rename); two runs flushing at once each merge the index on disk with their own
  records, so the slower loses at most the other's last records (misses: time, not
  answers);
* packs do not pile up: past :data:`MAX_PACKS` packs, or when more than half the bytes
  are records no index names, the live records are copied into one pack and the others
  removed — an unindexed pack younger than :data:`PACK_GRACE_NS` may be another run's,
  still being written, and is left alone.

Earlier versions kept one ``<2 hex>/<sha1>.col`` file per record; a flush removes those.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable

import msgspec

from neuronasv.fileio import read_regular, write_atomic

__all__ = ["MAX_PACKS", "PACK_GRACE_NS", "PackStore"]

#: Packs a folder may hold before its live records are copied into one.
MAX_PACKS = 16
#: An unindexed pack younger than this may be another run's, still being written.
PACK_GRACE_NS = 3600 * 10**9
#: The index's size bound (10,000 records take about 2 MB).
MAX_INDEX_BYTES = 512 << 20
#: A record's size bound (far above any record of ours).
MAX_RECORD_BYTES = 256 << 20
#: Dead bytes tolerated before a compaction, beside the half-of-all rule.
SLACK_BYTES = 64 << 20

INDEX_NAME = "index"
_INDEX_FORMAT = 1
_PACK = re.compile(r"p-[0-9a-f]{32}\.pack")
_LEGACY_DIR = re.compile(r"[0-9a-f]{2}")
_LEGACY_ENTRY = re.compile(r"[0-9a-f]{40}\.col")

_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_READ |= getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_WRITE |= getattr(os, "O_CLOEXEC", 0)

Where = tuple[str, int, int]  # pack name, offset, length


def _decode_index(raw: bytes) -> dict[str, Where]:
    """The index's records; anything malformed is left out (a miss), never an error."""
    try:
        doc = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return {}
    if not isinstance(doc, dict) or doc.get("format") != _INDEX_FORMAT:
        return {}
    entries = doc.get("entries")
    if not isinstance(entries, dict):
        return {}
    out: dict[str, Where] = {}
    for key, val in entries.items():
        if (
            isinstance(val, list)
            and len(val) == 3
            and isinstance(val[0], str)
            and _PACK.fullmatch(val[0])
            and all(type(x) is int for x in val[1:])
            and val[1] >= 0
            and 0 < val[2] <= MAX_RECORD_BYTES
        ):
            out[key] = (val[0], val[1], val[2])
    return out


class PackStore:
    """Records by key in ``directory`` (its packs and index).

    Args:
        directory: the folder (read even where it is a link: records prove themselves).
        writable: called before any write or removal; the folder's path when no folder on
            the way is a symbolic link (made when missing), else None (nothing is written).
        clock: nanoseconds since the epoch (for the grace of unindexed packs).

    Thread-safe for :meth:`read` and :meth:`append` (writer threads); :meth:`flush` is
    called by one thread when the writers are done.
    """

    def __init__(
        self,
        directory: str,
        writable: Callable[[], str | None],
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.directory = directory
        self._writable = writable
        self._clock = clock
        self._lock = threading.Lock()
        self._index: dict[str, Where] | None = None
        self._new: dict[str, Where] = {}
        self._readers: dict[str, int | None] = {}
        self._out: tuple[str, int] | None = None  # the pack being appended: (name, fd)
        self._end = 0
        self.compactions = 0

    # -- reading -----------------------------------------------------------------------

    def _loaded(self) -> dict[str, Where]:
        if self._index is None:
            self._index = self._read_index()
        return self._index

    def _read_index(self) -> dict[str, Where]:
        try:
            raw = read_regular(os.path.join(self.directory, INDEX_NAME), MAX_INDEX_BYTES)
        except OSError:
            return {}
        return _decode_index(raw)

    def _fd(self, pack: str) -> int | None:
        if pack in self._readers:
            return self._readers[pack]
        fd: int | None = None
        with contextlib.suppress(OSError):
            fd = os.open(os.path.join(self.directory, pack), _READ)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                fd = None
        self._readers[pack] = fd
        return fd

    def read(self, key: str) -> bytes | None:
        """The record stored under ``key`` (None: none, or its pack is gone or short)."""
        with self._lock:
            where = self._new.get(key) or self._loaded().get(key)
            if where is None:
                return None
            fd = self._fd(where[0])
        if fd is None:
            return None
        try:
            raw = os.pread(fd, where[2], where[1])
        except OSError:
            return None
        return raw if len(raw) == where[2] else None

    # -- writing -----------------------------------------------------------------------

    def append(self, key: str, record: bytes) -> None:
        """Store ``record`` under ``key`` (found by this store at once, by others after
        :meth:`flush`).

        Raises:
            OSError: the folder cannot be written (or is behind a symbolic link).
        """
        if len(record) > MAX_RECORD_BYTES:
            raise OSError(errno.EFBIG, "record too large")
        with self._lock:
            if self._out is None:
                folder = self._writable()
                if folder is None:
                    raise OSError(errno.ELOOP, "a symbolic link on the way")
                name = f"p-{secrets.token_hex(16)}.pack"
                self._out = (name, os.open(os.path.join(folder, name), _WRITE, 0o666))
                self._end = 0
            name, fd = self._out
            at = self._end
            view = memoryview(record)
            while view:
                view = view[os.write(fd, view) :]
            self._end += len(record)
            self._new[key] = (name, at, len(record))

    def flush(self) -> None:
        """Make this run's records findable by later runs (the index written whole), then
        tidy the folder: compaction past :data:`MAX_PACKS` or half dead bytes, unindexed
        packs past their grace and the former per-record files removed. Never raises for
        the folder: a cache that cannot be written costs time only."""
        with self._lock:
            self._close_out()
            new, self._new = self._new, {}
            try:
                if new:
                    self._publish(new)
            except OSError:
                self._index = None  # read again from the disk at the next use
            finally:
                self._close_readers()

    def close(self) -> None:
        """Let go of the open packs (records appended since the last flush stay unindexed)."""
        with self._lock:
            self._close_out()
            self._close_readers()

    def _close_out(self) -> None:
        if self._out is not None:
            os.close(self._out[1])
            self._out = None

    def _close_readers(self) -> None:
        for fd in self._readers.values():
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._readers.clear()

    def _publish(self, new: dict[str, Where]) -> None:
        folder = self._writable()
        if folder is None:
            return
        packs = self._packs(folder)
        disk = self._read_index()  # another run may have flushed since this one read it
        merged = {**disk, **new}
        merged = {k: w for k, w in merged.items() if w[0] in packs}
        live: dict[str, int] = {}
        for name, _at, n in merged.values():
            live[name] = live.get(name, 0) + n
        total = sum(size for size, _mtime in packs.values())
        replaced: set[str] = set()
        if len(live) > MAX_PACKS or total - sum(live.values()) > max(total // 2, SLACK_BYTES):
            replaced = set(live)
            merged = self._compact(folder, merged)
            live = {w[0]: 0 for w in merged.values()}
        text = json.dumps({"format": _INDEX_FORMAT, "entries": merged}, separators=(",", ":"))
        write_atomic(os.path.join(folder, INDEX_NAME), text)
        self._index = merged
        now = self._clock()
        # an unnamed pack that an index named, or this run wrote, is no run's work in progress
        done = replaced | {w[0] for w in disk.values()} | {w[0] for w in new.values()}
        for name, (_size, mtime) in packs.items():
            gone = name in done or now - mtime > PACK_GRACE_NS
            if name not in live and gone:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))
        _remove_legacy(folder)

    def _packs(self, folder: str) -> dict[str, tuple[int, int]]:
        """The folder's packs (regular files of our name form): name -> (size, mtime)."""
        out: dict[str, tuple[int, int]] = {}
        with os.scandir(folder) as it:
            for e in it:
                if _PACK.fullmatch(e.name) and e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    out[e.name] = (st.st_size, st.st_mtime_ns)
        return out

    def _compact(self, folder: str, merged: dict[str, Where]) -> dict[str, Where]:
        """Every live record copied into one new pack (sorted by where it was, so each old
        pack is read once, front to back); records that cannot be read are dropped."""
        name = f"p-{secrets.token_hex(16)}.pack"
        out: dict[str, Where] = {}
        fd = os.open(os.path.join(folder, name), _WRITE, 0o666)
        end = 0
        try:
            for key, (pack, at, n) in sorted(merged.items(), key=lambda kv: kv[1]):
                src = self._fd(pack)
                if src is None:
                    continue
                raw = os.pread(src, n, at)
                if len(raw) != n:
                    continue
                view = memoryview(raw)
                while view:
                    view = view[os.write(fd, view) :]
                out[key] = (name, end, n)
                end += n
        finally:
            os.close(fd)
        self.compactions += 1
        return out


def _remove_legacy(folder: str) -> None:
    """The former one-file-per-record layout (``<2 hex>/<40 hex>.col``): its files and
    then-empty folders, never following a link."""
    with os.scandir(folder) as it:
        subs = [e.path for e in it
                if _LEGACY_DIR.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]  # fmt: skip
    for sub in subs:
        with contextlib.suppress(OSError), os.scandir(sub) as it:
            for e in it:
                if _LEGACY_ENTRY.fullmatch(e.name) and e.is_file(follow_symlinks=False):
                    os.unlink(e.path)
        with contextlib.suppress(OSError):
            os.rmdir(sub)
