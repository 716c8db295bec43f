"""The parse cache's storage: records in append-only packs found through one index
(neuronasv/store/packstore.py). Records prove themselves elsewhere (signed entries), so
what is checked here is what the store alone promises: found after a flush, never read
outside its folder or from a FIFO, packs that do not pile up, runs that do not lose each
other's records, the former one-file-per-record layout removed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from neuronasv.store import packstore
from neuronasv.store.packstore import MAX_PACKS, PACK_GRACE_NS, PackStore


def _store(folder: Path, clock: list[int] | None = None) -> PackStore:
    def writable() -> str:
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)

    if clock is None:
        return PackStore(str(folder), writable)
    return PackStore(str(folder), writable, clock=lambda: clock[0])


def _packs(folder: Path) -> list[Path]:
    return sorted(folder.glob("p-*.pack"))


def test_a_record_is_found_by_its_own_store_at_once_and_by_others_after_the_flush(
    tmp_path: Path,
) -> None:
    a = _store(tmp_path / "c")
    a.append("/r/one.json", b"first")
    a.append("/r/two.json", b"second" * 1000)
    assert a.read("/r/one.json") == b"first"
    assert _store(tmp_path / "c").read("/r/one.json") is None  # no index yet
    a.flush()
    b = _store(tmp_path / "c")
    assert b.read("/r/one.json") == b"first" and b.read("/r/two.json") == b"second" * 1000
    assert b.read("/r/three.json") is None
    assert len(_packs(tmp_path / "c")) == 1  # one file for the run's records
    # a record written again: the newer one wins
    b.append("/r/one.json", b"newer")
    b.flush()
    assert _store(tmp_path / "c").read("/r/one.json") == b"newer"


def test_two_runs_flushing_one_after_the_other_keep_each_others_records(tmp_path: Path) -> None:
    a, b = _store(tmp_path / "c"), _store(tmp_path / "c")
    assert a.read("x") is None and b.read("y") is None  # both loaded the (empty) index
    a.append("a", b"A")
    b.append("b", b"B")
    a.flush()
    b.flush()  # merges the index a wrote after b read it
    c = _store(tmp_path / "c")
    assert c.read("a") == b"A" and c.read("b") == b"B"


def test_packs_do_not_pile_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "c"
    for i in range(MAX_PACKS + 3):  # one run per commit, one record each
        s = _store(folder)
        s.append(f"k{i}", f"v{i}".encode())
        s.flush()
    assert 1 <= len(_packs(folder)) <= MAX_PACKS
    s = _store(folder)
    assert [s.read(f"k{i}") for i in range(MAX_PACKS + 3)] == [
        f"v{i}".encode() for i in range(MAX_PACKS + 3)
    ]
    # every record written again (a fresh checkout re-hashes everything): the dead half
    # of the bytes goes
    monkeypatch.setattr(packstore, "SLACK_BYTES", 1 << 16)
    big = b"x" * (1 << 16)
    for round_ in range(3):
        s = _store(folder)
        for i in range(8):
            s.append(f"big{i}", big + bytes([round_]))
        s.flush()
    total = sum(p.stat().st_size for p in _packs(folder))
    assert total < 2 * 8 * len(big)
    assert _store(folder).read("big3") == big + b"\x02"


def test_an_unindexed_pack_is_left_alone_while_it_may_be_another_runs(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    clock = [10**18]
    writer = _store(folder)
    writer.append("theirs", b"being written")  # another run, not flushed yet
    (theirs,) = _packs(folder)
    os.utime(theirs, ns=(clock[0], clock[0]))
    mine = _store(folder, clock)
    mine.append("mine", b"m")
    mine.flush()
    assert theirs.exists()
    writer.flush()
    assert _store(folder).read("theirs") == b"being written"
    # an abandoned pack (its run died before its flush) goes once past the grace
    dead = _store(folder)
    dead.append("dead", b"dead!!!")
    dead.close()
    orphan = next(p for p in _packs(folder) if p.stat().st_size == 7)
    os.utime(orphan, ns=(clock[0], clock[0]))
    clock[0] += PACK_GRACE_NS + 1
    later = _store(folder, clock)
    later.append("later", b"l")
    later.flush()
    assert not orphan.exists() and theirs.exists()


_PACK0 = "p-" + "0" * 32 + ".pack"


def _index(where: object) -> bytes:
    return json.dumps({"format": 1, "entries": {"k": where}}).encode()


@pytest.mark.parametrize(
    "index",
    [
        b"",
        b"\x00\xff garbage",
        b"[1, 2]",
        json.dumps({"format": 99, "entries": {}}).encode(),
        _index(["../../etc/passwd", 0, 10]),
        _index(["/etc/passwd", 0, 10]),
        _index([_PACK0, -1, 10]),
        _index([_PACK0, 0, 1 << 40]),
        _index([_PACK0, 0, 5]),  # past the end of the pack
        _index([_PACK0, 0, "5"]),
        _index({"pack": _PACK0}),
    ],
)
def test_a_damaged_or_planted_index_is_a_miss_never_a_read_elsewhere(
    tmp_path: Path, index: bytes
) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "index").write_bytes(index)
    (folder / _PACK0).write_bytes(b"abc")  # shorter than it says
    s = _store(folder)
    assert s.read("k") is None
    s.append("k2", b"v")
    s.flush()  # the damaged index is replaced by a good one
    assert _store(folder).read("k2") == b"v"


def test_a_fifo_or_a_link_as_the_index_or_a_pack_is_a_miss(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    s = _store(folder)
    s.append("k", b"value")
    s.flush()
    (pack,) = _packs(folder)
    elsewhere = tmp_path / "users-file"
    elsewhere.write_bytes(pack.read_bytes())
    pack.unlink()
    pack.symlink_to(elsewhere)
    assert _store(folder).read("k") is None  # never read through a link
    pack.unlink()
    os.mkfifo(pack)
    assert _store(folder).read("k") is None  # nor from a FIFO (no hang)
    index = folder / "index"
    index.unlink()
    os.mkfifo(index)
    assert _store(folder).read("k") is None


def test_nothing_is_written_where_the_caller_says_the_way_is_a_link(tmp_path: Path) -> None:
    s = PackStore(str(tmp_path / "c"), lambda: None)
    with pytest.raises(OSError):
        s.append("k", b"v")
    s.flush()
    assert not (tmp_path / "c").exists()


def test_the_former_one_file_per_record_layout_is_removed_never_through_a_link(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "c"
    legacy = folder / "ab"
    legacy.mkdir(parents=True)
    (legacy / ("ab" + "0" * 38 + ".col")).write_bytes(b"old entry")
    users = tmp_path / "users"
    users.mkdir()
    (users / ("cd" + "0" * 38 + ".col")).write_bytes(b"the user's file")
    (folder / "cd").symlink_to(users)
    (folder / "notes.txt").write_text("kept")
    s = _store(folder)
    s.append("k", b"v")
    s.flush()
    assert not legacy.exists()
    assert (users / ("cd" + "0" * 38 + ".col")).read_bytes() == b"the user's file"
    assert (folder / "notes.txt").read_text() == "kept"


def test_compaction_past_the_pack_limit_keeps_every_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "c"
    monkeypatch.setattr(packstore, "MAX_PACKS", 2)
    for i in range(3):
        s = _store(folder)
        s.append(f"k{i}", b"v" * (i + 1))
        s.flush()
    assert len(_packs(folder)) == 1
    s = _store(folder)
    assert [s.read(f"k{i}") for i in range(3)] == [b"v", b"vv", b"vvv"]
