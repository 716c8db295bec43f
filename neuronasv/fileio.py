"""Atomic file writes: the one helper every writer uses (bottom layer, beside errors).

Write-then-rename: the data goes to a temporary file in the target's folder, is flushed,
and replaces the target with ``os.replace`` — a reader sees the old file or the new one,
never half of one, and a crash leaves at most a temporary file, never a truncated target.

The temporary name is ``.<name>.<pid>.<n>.tmp`` (hidden; ``n`` counts this process's
writes), so concurrent writers — processes of a pool, threads, two commands on one
folder — never share one (``<name>.tmp`` did), and it costs no ``O_EXCL`` retries
(``mkstemp`` was 4x slower for the publish cache's thousands of small entries). It is
created with ``open`` (the umask decides its mode, as for any new file) and removed when
the write fails.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import shutil
import stat
from collections.abc import Iterator
from typing import BinaryIO

__all__ = [
    "NotRegularFile",
    "atomic_open",
    "confined_path",
    "copy_regular_files",
    "is_temp_of",
    "read_regular",
    "temp_name",
    "write_atomic",
]

_COUNTER = itertools.count()  # names only, never reused: a counter, not a cache
_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.\d+\.\d+\.tmp$")


def temp_name(path: str) -> str:
    """A temporary path beside ``path`` that no other writer uses."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{os.getpid()}.{next(_COUNTER)}.tmp")


def is_temp_of(filename: str, name: str) -> bool:
    """Whether ``filename`` is a temporary file :func:`write_atomic` made for ``name``."""
    m = _TEMP_RE.match(filename)
    return m is not None and m.group("name") == name


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], *, make_dirs: bool = False) -> Iterator[BinaryIO]:
    """A binary file to stream into; it replaces ``path`` when the block ends without error.

    For content too large to hold in memory (a gzipped trace). Close any wrapper (a
    ``GzipFile``) inside the block, so its last bytes are written before the rename.

    Raises:
        OSError: the folder or the file cannot be written; no temporary file is left (nor
            when the block raises).
    """
    p = os.fspath(path)
    if make_dirs:
        os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
    tmp = temp_name(p)
    try:
        with open(tmp, "xb") as fh:
            yield fh
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    make_dirs: bool = False,
    encoding: str = "utf-8",
) -> None:
    """Replace ``path`` with ``data`` atomically (text is encoded with ``encoding``).

    Args:
        path: the target (a symlink is replaced by a regular file; callers that must keep
            links resolve them first, as ``commands.args.write_output`` does).
        data: the whole new content.
        make_dirs: create the target's folder first.

    Raises:
        OSError: the folder or the file cannot be written; no temporary file is left.
        UnicodeEncodeError: ``data`` is text that ``encoding`` cannot encode.
    """
    raw = data.encode(encoding) if isinstance(data, str) else data
    with atomic_open(path, make_dirs=make_dirs) as fh:
        fh.write(raw)


class NotRegularFile(OSError):
    """What :func:`read_regular` refuses: a link, a FIFO, a device, a folder, too big."""


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``.

    Opened without following a symbolic link and without blocking (``O_NOFOLLOW``,
    ``O_NONBLOCK``: a FIFO planted where a file is expected cannot hang the reader), then
    checked on the open descriptor (``fstat``), so what is checked is what is read.

    Raises:
        FileNotFoundError: nothing there.
        NotRegularFile: a symbolic link, a FIFO, a device or a folder, or more than
            ``max_bytes`` bytes (also when it grows while read).
        OSError: it cannot be read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    p = os.fspath(path)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a symbolic link
            raise NotRegularFile(errno.ELOOP, "a symbolic link, not a file", p) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", p)
        if st.st_size > max_bytes:
            raise NotRegularFile(errno.EFBIG, f"larger than {max_bytes} bytes", p)
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise NotRegularFile(errno.EFBIG, f"larger than {max_bytes} bytes", p)
        return b"".join(chunks)
    finally:
        os.close(fd)


def confined_path(root: str, parts: tuple[str, ...], *, create: bool = False) -> str | None:
    """``root/parts...`` when no component is a symbolic link, ``..`` or absolute and the
    result stays inside ``root`` (a resolved path); None otherwise. ``create`` makes the
    folders on the way (for a destination)."""
    path = root
    for i, part in enumerate(parts):
        if not part or part in (".", "..") or "/" in part or os.sep in part:
            return None
        path = os.path.join(path, part)
        if os.path.islink(path):
            return None
        if create and i < len(parts) - 1:
            os.makedirs(path, exist_ok=True)
    real = os.path.realpath(path)
    return path if os.path.commonpath([root, real]) == root and real != root else None


def copy_regular_files(src: str, dest: str) -> None:
    """Copy the regular files and folders under ``src``; symbolic links (to files or
    folders), FIFOs and devices are skipped, never followed."""
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel = os.path.relpath(dirpath, src)
        target = os.path.normpath(os.path.join(dest, rel))
        os.makedirs(target, exist_ok=True)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for fn in filenames:
            path = os.path.join(dirpath, fn)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                shutil.copyfile(path, os.path.join(target, fn))
