"""Shared argument checks and output writing for every sub-command (no copies elsewhere).

Each checker is an argparse ``type=``: a bad value becomes argparse's own
``error: argument --alpha: ...`` (exit 2) *before* the command does any work, so a
profile that would take minutes never runs only to fail on its ``--json`` path at the end.
Paths are checked for what the option means: an input file must exist, be a file (not a
folder) and be readable; an output file's folder must exist and the file must not be a
folder; an input folder must exist.

:func:`write_output` is the one way commands write a text result to a file: atomically
(temporary file in the same folder, then rename), and the temporary file is removed when
anything fails, so a failed write leaves nothing behind.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable

from neuronasv.errors import UsageError
from neuronasv.fileio import write_atomic

__all__ = [
    "existing_dir",
    "existing_file",
    "finite_nonnegative",
    "int_at_least",
    "machine_name",
    "output_dir",
    "output_file",
    "positive_int",
    "probability_open",
    "pvalue",
    "write_output",
]


def positive_int(text: str) -> int:
    """A positive decimal integer (PR numbers come from untrusted events: digits only)."""
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An integer ``>= minimum``."""

    def check(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    check.__name__ = f"integer >= {minimum}"
    return check


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def probability_open(text: str) -> float:
    """A probability strictly between 0 and 1 (a significance level: ``--alpha``)."""
    value = _finite(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value


def pvalue(text: str) -> float:
    """A p-value threshold in (0, 1] (``--max-pvalue``; 1 = no threshold)."""
    value = _finite(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def finite_nonnegative(text: str) -> float:
    """A finite number ``>= 0`` (``--min-magnitude``)."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def existing_file(text: str) -> str:
    """An input file: exists, is a file, can be read."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable (permission denied)")
    return text


def existing_dir(text: str) -> str:
    """An input folder: exists and is a folder."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is not a folder")
    return text


def output_file(text: str) -> str:
    """A file to write: its folder exists and is writable, and it is not itself a folder.

    ``-`` (stdout) is passed through for the options that document it.
    """
    if text == "-":
        return text
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"{text}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: folder {parent} is not writable")
    if os.path.exists(text) and not os.access(text, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: not writable (permission denied)")
    return text


def output_dir(text: str) -> str:
    """A folder to write into (created when missing): must not be an existing file."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    return text


def machine_name(text: str) -> str:
    """An asv machine name: becomes a folder name, so no separators and no ``..``."""
    from neuronasv.store.machine import check_machine_name

    try:
        return check_machine_name(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_output(text: str, path: str | None) -> None:
    """Write ``text`` to ``path`` atomically, or to stdout when ``path`` is None or ``-``.

    A regular file is replaced by rename (a reader never sees half of it); a symlink's
    target is replaced and the link kept; a device or pipe (``/dev/null``) is written in
    place, never replaced.

    Raises:
        UsageError: the file cannot be written (names it); no temporary file is left.
    """
    if not path or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if os.path.islink(path):
        path = os.path.realpath(path)  # replace the file it points to, keep the link
    if os.path.exists(path) and not os.path.isfile(path):
        # A device or a pipe (``--out /dev/null``, ``/dev/stdout``, a FIFO): written in
        # place; a rename would replace the device node itself with a regular file.
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    try:
        write_atomic(path, text)  # removes its temporary file when it fails
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except UnicodeEncodeError as exc:
        raise UsageError(f"cannot write {path}: text is not valid Unicode ({exc.reason})") from None
