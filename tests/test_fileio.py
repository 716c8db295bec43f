"""The one atomic write (neuronasv/fileio.py)."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from neuronasv.fileio import is_temp_of, temp_name, write_atomic

PKG = Path(__file__).resolve().parents[1] / "neuronasv"


def test_replaces_whole_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.json"
    write_atomic(target, "one", make_dirs=True)
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert os.listdir(target.parent) == ["f.json"]
    mask = os.umask(0o022)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask  # like any new file


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "\udcff")  # a lone surrogate cannot be encoded
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError):
        write_atomic(tmp_path / "dir", "x")  # a folder cannot be replaced by a file
    assert target.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["dir", "f.txt"]


def test_concurrent_writers_never_share_a_temporary_name(tmp_path: Path) -> None:
    target = tmp_path / "shared.json"
    names = {temp_name(str(target)) for _ in range(1000)}
    assert len(names) == 1000
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            for _ in range(50):
                write_atomic(target, f"{i}" * 1000)
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    text = target.read_text()
    assert len(text) == 1000 and len(set(text)) == 1  # one writer's whole file
    assert os.listdir(tmp_path) == ["shared.json"]


def test_temp_names_are_recognised() -> None:
    name = os.path.basename(temp_name("/x/.neuronasv-manifest.json"))
    assert is_temp_of(name, ".neuronasv-manifest.json")
    assert not is_temp_of(name, "other.json") and not is_temp_of("index.html", "index.html")


def test_nothing_else_renames_into_place() -> None:
    """Every write-then-rename of the package goes through write_atomic."""
    offenders = [
        str(p.relative_to(PKG))
        for p in PKG.rglob("*.py")
        if p.name != "fileio.py" and re.search(r"os\.replace\(|os\.rename\(", p.read_text())
    ]
    assert offenders == []


def test_atomic_open_streams_and_renames_only_on_success(tmp_path: Path) -> None:
    import gzip

    from neuronasv.fileio import atomic_open
    from neuronasv.measure.profiling import gzip_trace

    target = tmp_path / "t.bin"
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write(b"half")
        raise RuntimeError("stopped")
    assert os.listdir(tmp_path) == []  # neither the target nor a temporary file
    trace = tmp_path / "trace.json"
    trace.write_text('{"traceEvents": []}')
    out = gzip_trace(str(trace))
    assert gzip.decompress(Path(out).read_bytes()) == b'{"traceEvents": []}'
    assert os.listdir(tmp_path) == ["trace.json.gz"]
