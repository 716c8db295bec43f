"""Every test runs with a temporary, read-only HOME, and fails if anything is written there.

No command of the package may write into ``$HOME`` (asv's machine file lives in the run's
scratch folder; nothing else of ours goes there). The temporary HOME is set before any test
module is imported and inherited by every subprocess (asv, git, ``ci/*.sh``); it holds a
neutral git identity, because commits made by tests must not depend on (or borrow) the
developer's. It is made read-only (``0o555``: a write fails at once, except as root), and
an autouse fixture compares it before and after every test: a test during which anything
in it was created, changed or removed fails, naming the paths (this catches root too).
Tools' own caches (pip, npm, Chromium, ``XDG_*``) are pointed at a separate temporary
folder: they are not ours to forbid. Both folders are removed at the end.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator

import pytest

_REAL_HOME = os.environ.get("HOME")
_TMP_HOME: str | None = None
_TMP_CACHES: str | None = None

#: Tools' cache and config locations sent to the caches folder instead of HOME.
_CACHE_VARS = {
    "XDG_CACHE_HOME": "cache",
    "XDG_CONFIG_HOME": "config",
    "XDG_DATA_HOME": "data",
    "XDG_STATE_HOME": "state",
    "npm_config_cache": "npm",
    "PIP_CACHE_DIR": "pip",
}

#: Toolchains that live under HOME by default, kept at their real place when present.
_TOOLCHAIN_HOMES = {"RUSTUP_HOME": ".rustup", "CARGO_HOME": ".cargo"}


def snapshot(root: str) -> dict[str, tuple[int, int, int]]:
    """``relative path -> (mode, size, mtime_ns)`` of everything below ``root`` (and of
    ``root`` itself as ``"."``, whose mtime moves when an entry is added or removed)."""
    st = os.stat(root)
    out: dict[str, tuple[int, int, int]] = {".": (0, 0, st.st_mtime_ns)}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            size = 0 if stat.S_ISDIR(st.st_mode) else st.st_size
            out[os.path.relpath(path, root)] = (st.st_mode, size, st.st_mtime_ns)
    return out


Snapshot = dict[str, tuple[int, int, int]]


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths created, removed or modified between two snapshots, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def pytest_configure(config: pytest.Config) -> None:
    global _TMP_HOME, _TMP_CACHES
    _TMP_HOME = tempfile.mkdtemp(prefix="neuronasv-test-home-")
    _TMP_CACHES = tempfile.mkdtemp(prefix="neuronasv-test-caches-")
    with open(os.path.join(_TMP_HOME, ".gitconfig"), "w", encoding="utf-8") as fh:
        fh.write(
            "[user]\n\tname = neuronasv tests\n\temail = tests@neuronasv.invalid\n"
            "[init]\n\tdefaultBranch = main\n"
        )
    os.chmod(os.path.join(_TMP_HOME, ".gitconfig"), 0o444)
    os.chmod(_TMP_HOME, 0o555)
    os.environ["HOME"] = _TMP_HOME
    # Where log lines go must not depend on where the suite runs (neuronasv.log: a CI step
    # under GITHUB_ACTIONS=true writes workflow commands); a test that wants it sets it.
    os.environ.pop("GITHUB_ACTIONS", None)
    os.environ["NEURONASV_TEST_REAL_HOME"] = _REAL_HOME or ""
    for var, sub in _CACHE_VARS.items():
        os.environ[var] = os.path.join(_TMP_CACHES, sub)
    for var, sub in _TOOLCHAIN_HOMES.items():
        # A toolchain installed under the real HOME stays where it is: rustup's proxies
        # (rustc, cargo on PATH, run by pip builds) would otherwise write a fresh
        # settings file into the test HOME.
        real = os.path.join(_REAL_HOME or "", sub)
        if var not in os.environ and _REAL_HOME and os.path.isdir(real):
            os.environ[var] = real


def pytest_unconfigure(config: pytest.Config) -> None:
    if _REAL_HOME is not None:
        os.environ["HOME"] = _REAL_HOME
    for folder in (_TMP_HOME, _TMP_CACHES):
        if folder is not None:
            _make_writable(folder)
            shutil.rmtree(folder, ignore_errors=True)


def _make_writable(root: str) -> None:
    for dirpath, _, _ in os.walk(root):
        os.chmod(dirpath, 0o755)


@pytest.fixture(autouse=True)
def _home_untouched() -> Iterator[None]:
    """Fail the test during which anything was written into (or removed from) HOME."""
    home = os.environ.get("HOME", "")
    if home != _TMP_HOME or _TMP_HOME is None:
        yield  # the test replaced HOME for itself (monkeypatch): its own folder
        return
    before = snapshot(_TMP_HOME)
    yield
    after = snapshot(_TMP_HOME)
    changed = changed_paths(before, after)
    if changed:
        for rel in changed:  # put HOME back for the next test
            path = os.path.join(_TMP_HOME, rel)
            if rel not in before and os.path.lexists(path):
                _make_writable(_TMP_HOME)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        os.chmod(_TMP_HOME, 0o555)
        pytest.fail(f"the test wrote into HOME ({_TMP_HOME}): {', '.join(changed[:10])}")


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """``caplog`` catching the ``neuronasv`` logger's progress (INFO) and above."""
    caplog.set_level(logging.INFO, logger="neuronasv")
    return caplog


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    """The ``neuronasv`` logger's messages (INFO and above) as a live list."""
    from tests.builders import logged_lines

    with logged_lines() as lines:
        yield lines
