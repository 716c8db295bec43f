"""A cache costs time, never an answer — also against its writers (issue 38 item 2).

``regressions --cache-dir`` is kept between CI runs: whoever can write the folder (a
restored CI cache, a shared disk) may plant entries. An entry's checksum shows damage,
not who wrote it: each entry now carries an HMAC under a key that is never inside the
folder (store/cachekey.py), so a planted answer is a miss. Only regular files are read (a
FIFO where an entry is expected hung the run), and pruning never follows a link out.
Every case compares the cached run's document with a run without a cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronasv.store.filecolumns import decode_file, encode_file
from tests.publish.conftest import load_synth
from tests.store.test_histcache import explained, regressions, searched


@pytest.fixture()
def hist(tmp_path: Path) -> Path:
    dest = tmp_path / "h"
    load_synth().generate(dest, commits=50, workloads=2, ops=4)
    return dest


def _forge_explanation(path: Path) -> None:
    """A wrong answer under the right name, its checksum recomputed (a writer who knows
    the format; a signed entry keeps its old MAC: the key is not in the folder)."""
    entry = json.loads(path.read_text())
    entry["explanation"]["findings"] = []
    entry["explanation"]["work"] = []
    if "checksum" in entry:  # the former format: a checksum anyone can recompute
        body = json.dumps(entry["explanation"], sort_keys=True)
        entry["checksum"] = hashlib.sha256(body.encode()).hexdigest()
    path.write_text(json.dumps(entry))


def _forge_entry(raw: bytes) -> bytes:
    """A parsed file's values doubled, its checksums recomputed; a signed entry keeps its
    MAC (the former entry had none)."""
    head = json.loads(raw.partition(b"\n")[0])
    signed = head.get("format", 1) >= 2
    body = raw[:-32] if signed else raw
    head_raw, _, payload = body.partition(b"\n")
    fc = decode_file(payload)
    fc.values = fc.values * 2.0
    forged = head_raw + b"\n" + encode_file(fc)
    return forged + (raw[-32:] if signed else b"")


def _forge_columns(folder: Path) -> int:
    """Every entry the index names forged in place in its pack; how many."""
    index = json.loads((folder / "index").read_bytes())["entries"]
    for pack, at, n in index.values():
        raw = bytearray((folder / pack).read_bytes())
        forged = _forge_entry(bytes(raw[at : at + n]))
        assert len(forged) == n  # the same size: the index still points at it
        raw[at : at + n] = forged
        (folder / pack).write_bytes(bytes(raw))
    return len(index)


def _forge_windows(path: Path) -> None:
    """Every cached window's candidates moved, the trailer recomputed as a SHA-256 (what
    the former file carried; a signed file's MAC cannot be)."""
    raw = path.read_bytes()
    body = bytearray(raw[:-32])
    head_raw, _, data = bytes(body).partition(b"\n")
    n_cands = int(np.frombuffer(data, "<i8", 3)[2])
    at = len(head_raw) + 1 + len(data) - n_cands * 8
    cands = np.frombuffer(bytes(body[at:]), "<i8").copy()
    cands[:] = 3  # a change point at the 3rd point of every window
    body[at:] = cands.tobytes()
    path.write_bytes(bytes(body) + hashlib.sha256(bytes(body)).digest())


def test_a_planted_answer_with_a_recomputed_checksum_is_a_miss(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    plain, _ = regressions(hist, capsys, None, tmp_path / "a.json")
    cold, err = regressions(hist, capsys, cache, tmp_path / "b.json")
    made, pairs = explained(err)
    assert cold == plain and made == pairs > 0
    entries = sorted((cache / "explanations").glob("*.json"))
    (windows,) = cache.glob("*.cpcache")
    assert entries
    for p in entries:
        _forge_explanation(p)
    assert _forge_columns(cache / "columns") == 50
    _forge_windows(windows)
    warm, err = regressions(hist, capsys, cache, tmp_path / "c.json")
    assert warm == plain
    assert explained(err) == (pairs, pairs)  # every planted entry was a miss
    assert searched(err)[0] == searched(err)[1]  # and every window searched again


def test_a_fifo_where_an_entry_is_expected_does_not_hang_the_run(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    plain, _ = regressions(hist, capsys, None, tmp_path / "a.json")
    regressions(hist, capsys, cache, tmp_path / "b.json")
    planted = [
        sorted((cache / "explanations").glob("*.json"))[0],
        next((cache / "columns").glob("p-*.pack")),
        cache / "columns" / "index",
        next(cache.glob("*.cpcache")),
        sorted((cache / "layouts").glob("*.json"))[0],
    ]
    for p in planted:
        p.unlink()
        os.mkfifo(p)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    argv = [sys.executable, "-m", "neuronasv", "regressions", "--results-dir",
            str(hist / "results"), "--repo", str(hist / "repo"), "--format", "json",
            "--window", "20", "--out", str(tmp_path / "c.json"), "--cache-dir", str(cache)]
    wait = float(os.environ.get("TEST_FIFO_TIMEOUT", "300"))  # the former code hung here
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=wait,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    warm = json.loads((tmp_path / "c.json").read_text())
    warm.pop("created")
    assert warm == plain


def test_pruning_and_writing_never_follow_a_link_out_of_the_cache(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cache/explanations`` (and ``columns``, ``layouts``) planted as links to a user's
    folder: nothing there is deleted or written, and the answer is the same."""
    cache = tmp_path / "cache"
    plain, _ = regressions(hist, capsys, None, tmp_path / "a.json")
    regressions(hist, capsys, cache, tmp_path / "b.json")
    victims: dict[str, Path] = {}
    for sub in ("explanations", "columns", "layouts"):
        victim = tmp_path / f"users-{sub}"
        victim.mkdir()
        mine = victim / ("0" * 64 + ".json")  # a name of the explanation entries' form
        mine.write_text("the user's own file")
        victims[sub] = victim
        os.rename(cache / sub, tmp_path / f"moved-{sub}")
        (cache / sub).symlink_to(victim)
    warm, _ = regressions(hist, capsys, cache, tmp_path / "c.json")
    assert warm == plain
    for victim in victims.values():
        assert [p.name for p in victim.iterdir()] == ["0" * 64 + ".json"]
        assert (victim / ("0" * 64 + ".json")).read_text() == "the user's own file"


def test_the_key_is_beside_the_folder_never_inside_and_never_replaced(
    hist: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from neuronasv.store.cachekey import KEY_SUFFIX, key_path

    cache = tmp_path / "cache"
    plain, _ = regressions(hist, capsys, None, tmp_path / "a.json")
    regressions(hist, capsys, cache, tmp_path / "b.json")
    key = Path(key_path(str(cache)))
    assert key == tmp_path / ("cache" + KEY_SUFFIX) and key.is_file()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text().strip()) == 64
    assert not any(KEY_SUFFIX in p.name for p in cache.rglob("*"))
    # a new key (another runner, the folder restored from a CI cache): every entry a miss
    key.unlink()
    warm, err = regressions(hist, capsys, cache, tmp_path / "c.json")
    made, pairs = explained(err)
    assert warm == plain and made == pairs and searched(err)[0] == searched(err)[1]
    # the key from the environment (CI: a secret); one that is no key is exit 2
    monkeypatch.setenv("NEURONASV_CACHE_KEY", "ab" * 32)
    cold, _ = regressions(hist, capsys, cache, tmp_path / "d.json")
    warm, err = regressions(hist, capsys, cache, tmp_path / "e.json")
    assert cold == warm == plain and explained(err)[0] == 0
    monkeypatch.setenv("NEURONASV_CACHE_KEY", "not hex")
    from neuronasv.cli import main

    assert main(["regressions", "--results-dir", str(hist / "results"), "--repo",
                 str(hist / "repo"), "--cache-dir", str(cache)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "NEURONASV_CACHE_KEY" in err and "not hex" not in err
    monkeypatch.delenv("NEURONASV_CACHE_KEY")
    # a file that is no key where the key belongs: never replaced, the cache not used
    key.write_text("my notes")
    warm, err = regressions(hist, capsys, cache, tmp_path / "f.json")
    assert warm == plain and "not used" in err and key.read_text() == "my notes"


def test_doctor_never_shows_the_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuronasv.cli import main

    monkeypatch.setenv("NEURONASV_CACHE_KEY", "c0ffee" * 11)
    assert main(["doctor", "--env"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "NEURONASV_CACHE_KEY" in ln)
    assert "c0ffee" not in out and "not shown" in line, line
