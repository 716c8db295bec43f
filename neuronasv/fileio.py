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
import itertools
import os
import re
import shutil
import stat
from collections.abc import Iterator
from typing import BinaryIO

__all__ = [
    "atomic_open",
    "confined_path",
    "copy_regular_files",
    "is_temp_of",
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
