"""Every command against a table of hostile inputs (issue 13).

For each case: no traceback, the documented exit code (never 1: that means "a regression
matched --fail-on"), the offending file or option named in the message, and nothing
written or deleted anywhere but the command's own output (the whole temporary tree and the
temporary HOME are compared before and after).

Commands run in-process through ``neuronasv.cli.main``; every case fails before any
measurement starts, so the table is fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from neuronasv.cli import main
from neuronasv.model import FindingsDocument, RunRef, SeriesId
from tests.builders import finding

ROOT = Path(__file__).resolve().parents[1]
PR = ROOT / "tests" / "data" / "analyse" / "pr"
BASE, HEAD = "1a2b3c4d", "5e6f7a8b"


def _findings() -> dict:
    doc = FindingsDocument(
        mode="compare",
        base=RunRef(BASE + "0" * 32, "m"),
        head=RunRef(HEAD + "0" * 32, "m"),
        findings=(
            finding(SeriesId("b.t", (), "w", "4x4", "float32", "aten::mul"), "regression",
                    unit="s", base=1.0, head=2.0, confirmed=True, source="rounds"),
        ),
    )  # fmt: skip
    return doc.to_json()


def _with(change: Callable[[dict], None]) -> str:
    doc = _findings()
    change(doc)
    return json.dumps(doc)


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace (cwd) with good and hostile inputs next to each other."""
    w = tmp_path / "ws"
    w.mkdir()
    (w / "good.json").write_text(json.dumps(_findings()))
    (w / "truncated.json").write_text(json.dumps(_findings())[:120])
    (w / "deep.json").write_text("[" * 1500 + "]" * 1500)  # under the size limit below
    (w / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    (w / "confirmed-str.json").write_text(
        _with(lambda d: d["findings"][0]["state"].__setitem__("confirmed", "false"))
    )
    (w / "n-str.json").write_text(
        _with(lambda d: d["findings"][0]["estimate"].__setitem__("n_base", "7"))
    )
    (w / "surrogate.json").write_text(
        _with(lambda d: d["findings"][0]["series"].__setitem__("op", "aten::\ud800"))
    )
    text = json.dumps(_findings())
    (w / "infinity.json").write_text(text.replace('"head": 2.0', '"head": Infinity'))
    (w / "version.json").write_text(_with(lambda d: d.__setitem__("schema_version", 99)))
    (w / "big.json").write_text(json.dumps(_findings()) + " " * 5000)
    # issue 38 item 5: a fraction of peak below 0 ("-250 % → 50 % of peak" was printed)
    (w / "negative-peak.json").write_text(_with(lambda d: d["findings"][0].update(
        roofline_base=-2.5, roofline_head=0.5, roofline_bound="memory")))  # fmt: skip
    (w / "a-folder").mkdir()
    results = w / "results"
    shutil.copytree(PR, results)
    bad = results / "ci-cpu-1" / f"{BASE}-existing-py_usr_bin_python3.11.json"
    (w / "results-truncated").mkdir()
    shutil.copytree(PR, w / "results-truncated" / "r")
    shutil.copytree(PR, w / "results-negative-peak")
    side = w / "results-negative-peak" / "ci-cpu-1" / bad.name.replace(".json", ".neuronasv")
    text = side.read_text().replace('"roofline_fraction": null', '"roofline_fraction": -2.5', 1)
    side.write_text(text)
    tb = w / "results-truncated" / "r" / "ci-cpu-1" / bad.name
    tb.write_text(tb.read_text()[:200])
    (w / "foreign-site").mkdir()
    (w / "foreign-site" / "index.html").write_text("<h1>my own page</h1>")
    (w / "old-layout" / "site").mkdir(parents=True)
    (w / "old-layout" / "findings.json").write_text("{}")
    (w / "checkout").mkdir()
    (w / "checkout" / "README.md").write_text("mine")
    monkeypatch.chdir(w)
    monkeypatch.setattr("neuronasv.report.load.MAX_DOCUMENT_BYTES", 4096)
    return w


def _snapshot(*roots: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            out[dirpath] = None
            for fn in filenames:
                p = os.path.join(dirpath, fn)
                out[p] = b"<link>" if os.path.islink(p) else Path(p).read_bytes()
    return out


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    code: int
    says: tuple[str, ...]  # each must appear in stderr
    writes: tuple[str, ...] = field(default=())  # paths (relative to ws) allowed to change


def case(*argv: str, code: int, says: str | tuple[str, ...], writes: tuple[str, ...] = ()) -> Case:
    return Case(argv, code, (says,) if isinstance(says, str) else says, writes)


CASES: dict[str, Case] = {
    # --- report commands: findings documents --------------------------------------------
    "comment missing report": case("comment", "--pr", "1", "--report", "nope.json",
                                   code=2, says=("--report", "nope.json")),
    "comment report is a folder": case("comment", "--pr", "1", "--report", "a-folder",
                                       code=2, says=("--report", "a-folder is a folder")),
    "comment truncated": case("comment", "--pr", "1", "--report", "truncated.json",
                              "--dry-run", code=5, says=("truncated.json", "truncated")),
    "comment deep JSON": case("comment", "--pr", "1", "--report", "deep.json", "--dry-run",
                              code=5, says=("deep.json", "nested")),
    "comment huge JSON": case("comment", "--pr", "1", "--report", "big.json", "--dry-run",
                              code=5, says=("big.json", "limit")),
    "comment binary": case("comment", "--pr", "1", "--report", "binary.json", "--dry-run",
                           code=5, says=("binary.json", "UTF-8")),
    "comment confirmed as a string": case(
        "comment", "--pr", "1", "--report", "confirmed-str.json", "--dry-run",
        code=5, says=("confirmed-str.json", "'confirmed'", "true, false or null")),
    "comment n_base as a string": case(
        "comment", "--pr", "1", "--report", "n-str.json", "--dry-run",
        code=5, says=("n-str.json", "'n_base'")),
    "comment lone surrogate": case("comment", "--pr", "1", "--report", "surrogate.json",
                                   "--dry-run", code=5, says=("surrogate.json", "surrogate")),
    "comment Infinity": case("comment", "--pr", "1", "--report", "infinity.json", "--dry-run",
                             code=5, says=("infinity.json", "Infinity")),
    "comment schema version": case("comment", "--pr", "1", "--report", "version.json",
                                   "--dry-run", code=5, says=("version.json", "99")),
    "comment negative fraction of peak": case(
        "comment", "--pr", "1", "--report", "negative-peak.json", "--dry-run",
        code=5, says=("negative-peak.json", "roofline_base", ">= 0")),
    "summary negative fraction of peak": case(
        "summary", "--report", "negative-peak.json", "--out", "-",
        code=5, says=("negative-peak.json", "roofline_base", ">= 0")),
    "compare a sidecar's negative fraction of peak": case(
        "compare", BASE, HEAD, "--results-dir", "results-negative-peak",
        code=5, says=(f"{BASE}-existing", "roofline_fraction", ">= 0")),
    "comment pr zero": case("comment", "--pr", "0", "--report", "good.json", code=2,
                            says="--pr"),
    "comment out in a missing folder": case(
        "comment", "--pr", "1", "--report", "good.json", "--dry-run", "--out", "no/such/x.json",
        code=2, says=("--out", "no/such")),
    "comment body-out is a folder": case(
        "comment", "--pr", "1", "--report", "good.json", "--dry-run", "--body-out", "a-folder",
        code=2, says=("--body-out", "a-folder")),
    "status bad sha": case("status", "--sha", "xyz", "--report", "good.json", "--dry-run",
                           code=2, says="xyz"),
    "status wrong types": case("status", "--sha", "a" * 40, "--report", "confirmed-str.json",
                               "--dry-run", code=5, says="confirmed-str.json"),
    "summary report is a folder": case("summary", "--report", "a-folder", code=2,
                                       says=("--report", "a-folder")),
    "summary history missing": case("summary", "--report", "good.json", "--history", "nope",
                                    code=2, says=("--history", "nope")),
    # --- analysis commands -----------------------------------------------------------------
    "compare alpha 5": case("compare", BASE, HEAD, "--results-dir", "results", "--alpha", "5",
                            code=2, says="--alpha"),
    "compare alpha nan": case("compare", BASE, HEAD, "--results-dir", "results", "--alpha",
                              "nan", code=2, says="--alpha"),
    "compare alpha 0": case("compare", BASE, HEAD, "--results-dir", "results", "--alpha", "0",
                            code=2, says="--alpha"),
    "compare missing history-dir": case("compare", BASE, HEAD, "--results-dir", "results",
                                        "--history-dir", "nope", code=2,
                                        says=("--history-dir", "nope")),
    "compare missing acks": case("compare", BASE, HEAD, "--results-dir", "results", "--acks",
                                 "nope.json", code=2, says=("--acks", "nope.json")),
    "compare missing repo": case("compare", BASE, HEAD, "--repo", "nope", code=2,
                                 says=("--repo", "nope")),
    "compare out in a missing folder": case(
        "compare", BASE, HEAD, "--results-dir", "results", "--out", "missing/f.json",
        code=2, says=("--out", "missing")),
    "compare missing results folder": case("compare", BASE, HEAD, "--results-dir", "nope",
                                           code=5, says=("nope", "does not exist")),
    "compare truncated base results": case(
        "compare", BASE, HEAD, "--results-dir", "results-truncated/r",
        code=5, says=(f"{BASE}-existing", "not valid JSON", f"neuronasv run {BASE}")),
    "compare base never measured": case(
        "compare", "ffffffff", HEAD, "--results-dir", "results",
        code=2, says=("no results for 'ffffffff'", "neuronasv run ffffffff")),
    "compare machine with a path": case("compare", BASE, HEAD, "--results-dir", "results",
                                        "--machine", "../x", code=2, says="--machine"),
    "compare round file missing": case("compare", BASE, HEAD, "--results-dir", "results",
                                       "--round-base", "nope.json", "--round-head", "good.json",
                                       code=2, says=("--round-base", "nope.json")),
    "regressions window 0": case("regressions", "--results-dir", "results", "--window", "0",
                                 code=2, says="--window"),
    "regressions max-pvalue 7": case("regressions", "--results-dir", "results",
                                     "--max-pvalue", "7", code=2, says="--max-pvalue"),
    "regressions min-magnitude nan": case("regressions", "--results-dir", "results",
                                          "--min-magnitude", "nan", code=2,
                                          says="--min-magnitude"),
    "regressions min-magnitude negative": case("regressions", "--results-dir", "results",
                                               "--min-magnitude", "-0.1", code=2,
                                               says="--min-magnitude"),
    "regressions missing acks": case("regressions", "--results-dir", "results", "--acks",
                                     "nope.json", code=2, says=("--acks", "nope.json")),
    "regressions missing results": case("regressions", "--results-dir", "nope", code=5,
                                        says="nope"),
    "confirm rounds 0": case("confirm", "--findings", "good.json", "--rounds", "0", code=2,
                             says="--rounds"),
    "confirm findings missing": case("confirm", "--findings", "nope.json", code=2,
                                     says=("--findings", "nope.json")),
    "confirm findings corrupt": case("confirm", "--findings", "confirmed-str.json", code=5,
                                     says="confirmed-str.json"),
    "confirm history-dir missing": case("confirm", "--findings", "good.json", "--history-dir",
                                        "nope", code=2, says=("--history-dir", "nope")),
    "ack file is a folder": case("ack", "--list", "--file", "a-folder", code=2,
                                 says=("--file", "a-folder")),
    "ack file binary": case("ack", "--list", "--file", "binary.json", code=5,
                            says="binary.json"),
    # issue 22 item 8: the commit is checked (the workspace is no git repository)
    "ack commit not hex": case("ack", "x*", "--commit", "not-hex!", "--reason", "r",
                               code=2, says=("--commit", "not-hex!", "not a commit")),
    "ack commit unknown": case("ack", "x*", "--commit", "abcdef12", "--reason", "r",
                               code=2, says=("abcdef12", "not a git repository")),
    "ack forced short hash": case("ack", "x*", "--commit", "abcdef12", "--reason", "r",
                                  "--force", code=2, says=("abcdef12", "40-hex")),
    "ack forced non-hex": case("ack", "x*", "--commit", "g" * 40, "--reason", "r",
                               "--force", code=2, says="not a commit"),
    # --- measure / store / publish / demo -----------------------------------------------
    "profile json into a missing folder": case("profile", "--json", "no/such/p.json", code=2,
                                               says=("--json", "no/such")),
    "profile json is a folder": case("profile", "--json", "a-folder", code=2,
                                     says=("--json", "a-folder")),
    "profile samples 0": case("profile", "--samples", "0", code=2, says="--samples"),
    "run machine climbing out": case("run", "--machine", "../../x", code=2,
                                     says=("--machine", "../../x")),
    "run machine with a slash": case("run", "--machine", "a/b", code=2, says="--machine"),
    "run machine dot-dot": case("run", "--machine", "..", code=2, says="--machine"),
    "store push truncated results": case(
        "store", "push", "--results-dir", "results-truncated/r",
        code=5, says=(f"{BASE}-existing", "nothing was pushed")),
    "store machine climbing out": case("store", "pull", "--machine", "../x", code=2,
                                       says="--machine"),
    "store max-attempts 0": case("store", "list", "--max-attempts", "0", code=2,
                                 says="--max-attempts"),
    "store out is a file": case("store", "pull", "--out", "good.json", code=2,
                                says=("--out", "good.json")),
    "publish into a foreign folder": case(
        "publish", "--results-dir", "results", "--out", "foreign-site",
        code=2, says=("foreign-site", "index.html")),
    "publish into the workspace": case("publish", "--results-dir", "results", "--out", ".",
                                       code=2, says="did not write"),
    "publish findings corrupt": case("publish", "--results-dir", "results", "--out", "site",
                                     "--findings", "confirmed-str.json", code=5,
                                     says="confirmed-str.json"),
    "publish missing results": case("publish", "--results-dir", "nope", "--out", "site",
                                    code=5, says="nope"),
    "publish workers 0": case("publish", "--results-dir", "results", "--workers", "0", code=2,
                              says="--workers"),
    "demo into a foreign folder": case("demo", "--repo", str(ROOT), "--out", "checkout",
                                       "--fresh", code=2, says=("checkout", "did not create")),
    "demo into the checkout": case("demo", "--repo", str(ROOT), "--out", str(ROOT), "--fresh",
                                   code=2, says=("holds the checkout",)),
    "demo into its parent": case("demo", "--repo", str(ROOT), "--out", str(ROOT.parent),
                                 "--fresh", code=2, says=("holds the checkout",)),
    "demo rounds negative": case("demo", "--rounds", "-1", code=2, says="--rounds"),
    "demo fresh on an unmarked old layout": case(
        "demo", "--repo", str(ROOT), "--out", "old-layout", "--fresh",
        code=2, says=("old-layout", "no marker")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input(
    name: str, ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    c = CASES[name]
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    home = Path(os.environ["HOME"])
    before = _snapshot(ws, home)
    root_before = _snapshot(ROOT / "out") if (ROOT / "out").exists() else {}
    try:
        code = main(list(c.argv))
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    assert "internal error" not in err, err
    assert code == c.code, (code, err)
    for text in c.says:
        assert text in err, (text, err)
    after = _snapshot(ws, home)
    allowed = {str(ws / w) for w in c.writes}
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    changed -= {p for p in changed if any(p == a or p.startswith(a + os.sep) for a in allowed)}
    assert not changed, f"{name}: wrote or deleted {sorted(changed)}"
    if root_before:
        assert _snapshot(ROOT / "out") == root_before
    assert (ROOT / "README.md").is_file()  # the checkout is still there


def test_home_is_temporary() -> None:
    """tests/conftest.py: asv's machine file and git's config go to a temporary HOME."""
    real = os.environ.get("NEURONASV_TEST_REAL_HOME", "")
    assert os.environ["HOME"] != real and "neuronasv-test-home-" in os.environ["HOME"]


def test_an_unexpected_exception_is_not_exit_1(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug exits 11 with one line naming it (exit 1 means a regression under --fail-on)."""

    def boom(args: object) -> int:
        raise KeyError("surprise")

    monkeypatch.setattr("neuronasv.commands.ack.run", boom)
    assert main(["ack", "--list"]) == 11
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "neuronasv ack" in err
    assert "Traceback" not in err


def test_publish_deletes_nothing_a_planted_manifest_names(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest only nominates chunks: names outside our layout, paths that climb out
    and files that are not our chunks survive a publish."""
    site = ws / "site"
    assert main(["publish", "--results-dir", "results", "--out", str(site)]) == 0
    victim = ws / "victim.js"
    victim.write_text("keep me")
    foreign_chunk = site / "m" / "x" / "y" / "c00000.js"
    foreign_chunk.parent.mkdir(parents=True)
    foreign_chunk.write_text("not ours")
    manifest = site / ".neuronasv-manifest.json"
    planted = json.loads(manifest.read_text())
    planted.update({"m/../../victim.js": "0", "../victim.js": "0", "m/x/y/c00000.js": "0"})
    manifest.write_text(json.dumps(planted))
    assert main(["publish", "--results-dir", "results", "--out", str(site)]) == 0
    assert victim.read_text() == "keep me"
    assert foreign_chunk.read_text() == "not ours"


def test_demo_fresh_deletes_only_its_own_marked_folder(ws: Path) -> None:
    from neuronasv.demo import MARKER, check_out_folder

    own = ws / "demo-out"
    own.mkdir()
    (own / MARKER).write_text("x")
    (own / "results").mkdir()
    assert check_out_folder(str(own), str(ROOT)) is True
    assert check_out_folder(str(ws / "new"), str(ROOT)) is False
    old = ws / "old-demo"  # written by a version before the marker: the demo's names only
    (old / "site").mkdir(parents=True)
    (old / "findings.json").write_text("{}")
    assert check_out_folder(str(old), str(ROOT)) is False  # reusable, but not deletable


def test_profile_json_checked_before_any_work(ws: Path) -> None:
    """`profile --json` into a missing folder, or onto a folder, fails in argparse: no
    backend was chosen, nothing profiled, and no temporary file is left (not even at /)."""
    exe = str(Path(sys.executable).parent / "neuronasv")
    root_before = set(os.listdir("/"))
    for target in ("/nonexistent/p.json", "/"):
        r = subprocess.run([exe, "profile", "--json", target], capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
        assert r.returncode == 2 and "--json" in r.stderr and "Traceback" not in r.stderr
        assert "backend" not in r.stdout
    assert set(os.listdir("/")) == root_before


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda t: t[:200], "not valid JSON"),
        (lambda t: t.replace('"version": 2', '"version": 3'), "api_version 3"),
        (lambda t: "\x89PNG\x00\x01\xff\xfe", "not UTF-8"),
        (lambda t: t.replace("[", "[Infinity, ", 1), ""),
        (lambda t: "", "empty file"),
    ],
    ids=["truncated", "wrong-version", "binary", "infinity", "empty"],
)
def test_compare_names_the_unreadable_results_file(
    ws: Path, capsys: pytest.CaptureFixture[str], damage: Callable[[str], str], why: str
) -> None:
    """Issue 13 item 9: the base's file is damaged -> exit 5 naming it and why (never the
    old "no machine has results for both"), with `neuronasv run BASE` as the way out."""
    name = f"{BASE}-existing-py_usr_bin_python3.11.json"
    path = ws / "results" / "ci-cpu-1" / name
    text = path.read_text()
    damaged = damage(text)
    if damaged == text.replace("[", "[Infinity, ", 1):  # put Infinity where a value is
        doc = json.loads(text)
        bench = next(iter(doc["results"]))
        doc["results"][bench][0] = [float("inf")] * len(doc["results"][bench][0] or [0])
        damaged = json.dumps(doc)
        why = "infinite"
    path.write_bytes(damaged.encode("latin-1"))  # the results are ASCII; \xff stays a byte
    code = main(["compare", BASE, HEAD, "--results-dir", "results"])
    err = capsys.readouterr().err
    assert code == 5, err
    assert name in err and why in err and f"neuronasv run {BASE}" in err, err
    assert "no machine has results for both" not in err


def test_write_output_never_replaces_a_device_or_a_link(tmp_path: Path) -> None:
    """`--out /dev/null` (ci/pr-bench.sh does it) must write into the device, not rename a
    regular file over it; checked on a FIFO and a symlink here, never on the real /dev/null."""
    import stat
    import threading

    from neuronasv.commands.args import write_output

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_output("through the pipe\n", str(fifo))
    reader.join(timeout=30)
    assert got == ["through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)

    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_output("new", str(link))
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link.json", "real.json"]
