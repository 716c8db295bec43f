"""asv's launch method follows the temporary folder: its forkserver's Unix socket must fit.

Under pytest-xdist the temporary folders grew by ``popen-gw0/`` and a bisection's asv run
died with "Failed to start server thread" (the socket's path passed 107 bytes)."""

from __future__ import annotations

import socket
import sys
import tempfile
from pathlib import Path

import pytest

from neuronasv.run.asvrun import SOCKET_PATH_MAX, launch_method

_TAIL = "/asv-forkserver-abcdefgh/socket"


def _folder_of_length(base: Path, n: int) -> str:
    """A folder path of exactly ``n`` bytes under ``base`` (made)."""
    name = "x" * (n - len(str(base)) - 1)
    folder = base / name
    folder.mkdir()
    return str(folder)


def test_a_short_temporary_folder_keeps_the_forkserver() -> None:
    assert launch_method("/tmp") == "forkserver"
    assert launch_method("/t" * ((SOCKET_PATH_MAX - len(_TAIL)) // 2)) == "forkserver"


def test_a_long_temporary_folder_takes_spawn() -> None:
    assert launch_method("/" + "y" * (SOCKET_PATH_MAX - len(_TAIL))) == "spawn"
    assert launch_method("/" + "y" * 200) == "spawn"


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets")
def test_the_longest_forkserver_folder_binds_and_a_longer_one_would_not() -> None:
    longest = SOCKET_PATH_MAX - len(_TAIL)
    # pytest's own temporary folders are already near the limit under xdist: a short one.
    with tempfile.TemporaryDirectory(prefix="nx", dir="/tmp") as short:
        _bind_at_the_limit(Path(short), longest)


def _bind_at_the_limit(base: Path, longest: int) -> None:
    folder = _folder_of_length(base, longest)
    assert launch_method(folder) == "forkserver"
    assert launch_method(folder + "x") == "spawn"
    (Path(folder) / "asv-forkserver-abcdefgh").mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(folder + _TAIL)  # what asv's server does: it fits
    if sys.platform.startswith("linux"):
        longer = folder + "x" * 5
        (Path(longer) / "asv-forkserver-abcdefgh").mkdir(parents=True)
        too_long = longer + _TAIL  # 108 bytes: no room for the NUL (the folders exist)
        assert len(too_long) == 108
        with socket.socket(socket.AF_UNIX) as s, pytest.raises(OSError):
            s.bind(too_long)  # the server's failure that spawn avoids
