"""A disk cache of parsed results files, so a publish after one new commit parses one file.

Plugs into ``neuronasv.store.history.load_history(cache=...)`` (protocol
``get(path, stat_key) / put(path, stat_key, parsed)``) and into the site's own columnar
scan (:mod:`neuronasv.publish.scan`). One cache file per results file, named by a hash of
its absolute path, holding a one-line JSON header and the encoded payload.

Keys: the ``stat_key`` the caller passes (mtime and size of the results file and its
sidecar). A fresh ``git checkout`` of the results branch (every CI run) gives every file a
new mtime, so on a stat mismatch the cache compares a SHA-256 digest of the file contents
(results + sidecar) with the one it stored: equal content is still a hit, and the header
is refreshed with the new stat key. Reading a file to hash it costs far less than parsing
it (JSON float parsing dominates).

Payloads are never pickled (a cache restored from CI storage is data, not code): the
codec turns the parsed object into bytes and back — JSON for the loader's ``ParsedFile``,
raw float arrays for the scan's summaries.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from neuronasv.fileio import write_atomic
from neuronasv.store.layout import sidecar_path

__all__ = [
    "CacheStats",
    "Codec",
    "ParseCache",
    "content_digest",
    "digest_bytes",
    "history_codec",
]

T = TypeVar("T")
_FORMAT = 2  # bump when the entry layout or digest changes: old entries then read as misses


@dataclass
class CacheStats:
    """Counters for one run (printed by ``neuronasv publish``)."""

    hits: int = 0
    digest_hits: int = 0
    misses: int = 0
    writes: int = 0


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How one kind of parsed object becomes bytes and back.

    ``name`` and ``version`` are part of every entry: an entry written by another codec
    or an older version reads as a miss, never as the wrong type.
    """

    name: str
    version: int
    encode: Callable[[T], bytes]
    decode: Callable[[bytes], T]


def history_codec() -> Codec[Any]:
    """The codec for ``neuronasv.store.history.ParsedFile`` (its own JSON form)."""
    from neuronasv.store.history import ParsedFile

    def enc(p: Any) -> bytes:
        return json.dumps(p.to_json(), allow_nan=False, separators=(",", ":")).encode()

    def dec(b: bytes) -> Any:
        return ParsedFile.from_json(json.loads(b))

    # 2: asv_env (what asv recorded about the run) added; version-1 entries read as misses.
    return Codec("history.ParsedFile", 2, enc, dec)


def digest_bytes(results: bytes, sidecar: bytes) -> str:
    """SHA-256 of a results file's and its sidecar's bytes (absent sidecar = empty).

    SHA-256 rather than BLAKE2: CPUs with SHA extensions hash it ~2x faster, and each
    parsed file is hashed once (~0.25 ms for 360 kB).
    """
    h = hashlib.sha256()
    for data in (results, sidecar):
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def content_digest(path: str) -> str:
    """SHA-256 of a results file and its sidecar (absent sidecar = empty)."""
    parts: list[bytes] = []
    for p in (path, sidecar_path(path)):
        try:
            with open(p, "rb") as fh:
                parts.append(fh.read())
        except FileNotFoundError:
            parts.append(b"")
    return digest_bytes(*parts)


class ParseCache(Generic[T]):
    """Per-file disk cache of parsed results.

    Args:
        directory: where entries live (created on first write).
        codec: how payloads are encoded (default: the history loader's ``ParsedFile``).

    Entries that cannot be read (truncated by a crash, another format) are misses, never
    errors: the caller parses the file again and the entry is rewritten.
    """

    def __init__(self, directory: str | os.PathLike[str], codec: Codec[T] | None = None) -> None:
        self.codec: Codec[Any] = codec if codec is not None else history_codec()
        self.base = os.fspath(directory)
        self.directory = os.path.join(self.base, self.codec.name)
        self._made: set[str] = set()
        self.stats = CacheStats()

    def _entry(self, path: str) -> str:
        h = hashlib.sha1(os.path.abspath(path).encode(), usedforsecurity=False).hexdigest()
        return os.path.join(self.directory, h[:2], h + ".entry")

    def _read(self, path: str) -> tuple[dict[str, Any], bytes] | None:
        try:
            with open(self._entry(path), "rb") as fh:
                raw = fh.read()
            head, _, payload = raw.partition(b"\n")
            header = json.loads(head)
        except (OSError, ValueError):
            return None
        if (
            not isinstance(header, dict)
            or header.get("format") != _FORMAT
            or header.get("codec") != [self.codec.name, self.codec.version]
            or header.get("path") != os.path.abspath(path)
            or header.get("size") != len(payload)
        ):
            return None
        return header, payload

    def get(self, path: str, stat_key: Sequence[int]) -> T | None:
        """The parsed form of ``path`` if its content is unchanged, else None."""
        got = self._read(path)
        if got is None:
            self.stats.misses += 1
            return None
        header, payload = got
        if header.get("stat") != list(stat_key):
            if header.get("digest") != content_digest(path):
                self.stats.misses += 1
                return None
            self.stats.digest_hits += 1
            self._write(path, stat_key, payload, header["digest"])
        else:
            self.stats.hits += 1
        try:
            return self.codec.decode(payload)
        except (ValueError, KeyError, TypeError):
            self.stats.misses += 1
            return None

    def put(self, path: str, stat_key: Sequence[int], parsed: T, digest: str | None = None) -> None:
        """Store the parsed form of ``path`` under ``stat_key``.

        ``digest``: :func:`digest_bytes` of the bytes that were parsed, when the caller
        has them (saves reading both files again); else the files are read.
        """
        self.put_encoded(path, stat_key, self.codec.encode(parsed), digest)

    def put_encoded(
        self, path: str, stat_key: Sequence[int], payload: bytes, digest: str | None = None
    ) -> None:
        """:meth:`put` for a payload already encoded with this cache's codec."""
        self._write(path, stat_key, payload, digest or content_digest(path))

    def _write(self, path: str, stat_key: Sequence[int], payload: bytes, digest: str) -> None:
        header = {
            "format": _FORMAT,
            "codec": [self.codec.name, self.codec.version],
            "path": os.path.abspath(path),
            "stat": list(stat_key),
            "digest": digest,
            "size": len(payload),
        }
        entry = self._entry(path)
        folder = os.path.dirname(entry)
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)
        # write-then-rename: a crash never leaves a half entry under the real name
        write_atomic(entry, json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload)
        self.stats.writes += 1
