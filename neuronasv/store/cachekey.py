"""The key that signs the caches of ``neuronasv regressions --cache-dir`` (issue 38 item 2).

A cache entry holds an answer that costs time to compute (a parsed results file, a window's
change-point candidates, a culprit's explanation): a checksum shows it was not damaged, not
that the answer is ours. The cache folder is kept between CI runs (restored from storage
other jobs may write) and may be shared, so each entry carries an HMAC-SHA256 under a key
that is **never inside the cache folder**; an entry whose MAC does not verify is a miss
(the answer is computed again), never an answer.

Where the key is, in order:

1. ``NEURONASV_CACHE_KEY`` (at least 32 hex digits): for CI, where the folder is restored
   between runs: give it from a repository secret that jobs running PR code never see.
   Without it, a fresh CI runner makes a new key file, and every entry of a restored folder
   is a miss: the first run on that runner costs its full time, as without a cache.
2. ``<cache folder>.neuronasv-key`` beside the folder (``/x/cache`` → ``/x/cache.neuronasv-key``):
   made on first use (32 random bytes in hex, mode 0600, never replacing a file), read
   only as a regular file. Whoever can write the folder's parent can write it too: the
   parent is as trusted as the results themselves.

A key file that is there but is no key (or cannot be made) leaves the cache unused for
the run (one warning), never a file overwritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets

from neuronasv import env
from neuronasv.fileio import read_regular, temp_name

__all__ = ["KEY_SUFFIX", "CacheKey", "cache_key", "key_path"]

#: The key file's name: the cache folder's, with this suffix.
KEY_SUFFIX = ".neuronasv-key"
_HEX_KEY = re.compile(rb"[0-9a-f]{64}\n?")


class CacheKey:
    """An HMAC-SHA256 key; :meth:`sign` and :meth:`verify` take the entry's parts (a purpose
    first, so an entry of one cache never verifies as another's)."""

    SIZE = 32  #: bytes of a MAC

    def __init__(self, key: bytes) -> None:
        self._key = key

    def sign(self, *parts: bytes) -> bytes:
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        for p in parts:
            mac.update(len(p).to_bytes(8, "little"))
            mac.update(p)
        return mac.digest()

    def verify(self, mac: bytes, *parts: bytes) -> bool:
        return hmac.compare_digest(mac, self.sign(*parts))


def key_path(cache_dir: str) -> str:
    """Where the key file of ``cache_dir`` is: beside it, never inside."""
    return os.path.abspath(cache_dir).rstrip(os.sep) + KEY_SUFFIX


def cache_key(cache_dir: str, key_file: str | None = None) -> tuple[CacheKey | None, str]:
    """The key of ``cache_dir``'s entries, and how it was found (or why there is none).

    Args:
        cache_dir: the cache folder.
        key_file: where the key file is when not beside ``cache_dir`` (a folder of several
            caches keeps one key beside itself: ``python -m neuronasv.ci analyse``).

    Raises:
        UsageError: ``NEURONASV_CACHE_KEY`` is set but is no key (exit 2).
    """
    key = env.CACHE_KEY.read()
    if key is not None:
        return CacheKey(key), f"{env.CACHE_KEY.name}"
    path = key_file or key_path(cache_dir)
    try:
        raw = read_regular(path, 256)
    except FileNotFoundError:
        made = _make(path)
        return (CacheKey(made), path) if made else (None, f"cannot make {path}")
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    if not _HEX_KEY.fullmatch(raw):
        return None, f"{path} is no neuronasv cache key (not replaced)"
    return CacheKey(bytes.fromhex(raw.strip().decode())), path


def _make(path: str) -> bytes | None:
    """A new key in a new file at ``path`` (written whole, then linked in: never over a
    file, and another process making one at the same time wins or loses whole)."""
    key = secrets.token_bytes(32)
    tmp = temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)  # fmt: skip
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(key.hex() + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:  # another process made it first: use theirs
            raw = read_regular(path, 256)
            return bytes.fromhex(raw.strip().decode()) if _HEX_KEY.fullmatch(raw) else None
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return key
