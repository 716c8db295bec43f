"""The workflow's bisect step: which change points it bisects (pure planning over real git)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from neuronasv.ci.bisect_step import bisect_args, plan_ranges
from neuronasv.model import ChangePoint, SeriesId
from neuronasv.model.culprit import Culprit
from neuronasv.store.git import Git
from tests.builders import history_doc


def _repo(path: Path, n: int) -> list[str]:
    path.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")  # fmt: skip
    run = lambda *a: subprocess.run(["git", *a], cwd=path, env=env, check=True,  # noqa: E731
                                    capture_output=True, text=True).stdout.strip()  # fmt: skip
    run("init", "-q", "-b", "main")
    out = []
    for i in range(n):
        run("commit", "-q", "--allow-empty", "-m", f"c{i}")
        out.append(run("rev-parse", "HEAD"))
    return out


def _cp(before: str, after: str, op: str, unit: str, ratio: float, **kw) -> ChangePoint:
    sid = SeriesId("b", (op,), "w", "4x4", "float32", op)
    kind = "regression" if ratio > 1 else "improvement"
    return ChangePoint(sid, "m", before, after, 3, 1.0, ratio, ratio, 0.0001, unit,
                       kind, open=True, **kw)  # fmt: skip


def test_ranges_with_unmeasured_commits_one_search_each_exact_first(tmp_path: Path) -> None:
    shas = _repo(tmp_path / "repo", 8)
    results = tmp_path / "results" / "m"
    results.mkdir(parents=True)
    for c in (shas[0], shas[3], shas[4], shas[7]):  # measured: 0, 3, 4, 7
        (results / f"{c[:8]}-py.json").write_text("{}")
    doc = history_doc(
        _cp(shas[0], shas[3], "aten::mul", "seconds", 1.8),
        _cp(shas[0], shas[3], "aten::mul", "instructions", 1.2),  # exact: chosen
        _cp(shas[3], shas[4], "aten::add", "seconds", 2.0),  # one commit: nothing to bisect
        _cp(shas[4], shas[7], "aten::add", "seconds", 1.5, acknowledged="expected"),
        _cp(shas[4], shas[7], "aten::sum", "seconds", 0.5),  # an improvement: not bisected
        machine="m",
    )
    ranges = plan_ranges([doc], Git(str(tmp_path / "repo")), str(tmp_path / "results"))
    assert [(r.cp.unit, r.unmeasured, r.candidates) for r in ranges] == [("instructions", 2, 3)]
    named = Culprit("culprit", "instructions", shas[2], shas[3], commit=shas[3])
    done = history_doc(_cp(shas[0], shas[3], "aten::mul", "instructions", 1.2, culprit=named),
                       machine="m")  # fmt: skip
    assert plan_ranges([done], Git(str(tmp_path / "repo")), str(tmp_path / "results")) == []


def test_the_search_names_the_change_points_series_by_its_id_not_its_label(
    tmp_path: Path,
) -> None:
    """The step's round trip, SeriesId → ``--series`` → the series bisected, with no label
    on the way: an op named ``x (instructions)`` and the instruction count of op ``x`` share
    a label, and the search of each names that one (the command line it says, through the
    command's own parser, and the options it runs in process)."""
    from neuronasv.ci.bisect_step import bisect_options
    from neuronasv.cli import build_parser
    from neuronasv.commands.bisect import options
    from neuronasv.model.history import History, Series
    from neuronasv.run.bisect import match_series

    a, b = "a" * 40, "b" * 40
    timed = SeriesId("d.W.devtime_op", ("'4x4'", "'float32'", "'x (instructions)'"), "w",
                     "4x4", "float32", "x (instructions)")  # fmt: skip
    counted = SeriesId("d.W.instr_op", ("'4x4'", "'float32'", "'x'"), "w", "4x4", "float32", "x")
    star = SeriesId("d.W.devtime_op", ("'4x4'", "'float32'", "'a*[b]?'"), "w", "4x4",
                    "float32", "a*[b]?")  # fmt: skip
    assert timed.label == counted.label
    history = History(tuple(Series("m", "py", s, "seconds", ()) for s in (timed, counted, star)))
    where = {"repo": str(tmp_path), "results_dir": "h", "backend": "cpu", "minutes": 5.0}
    for sid, unit in ((timed, "seconds"), (counted, "instructions"), (star, "seconds")):
        cp = ChangePoint(sid, "m", a, b, 3, 1.0, 1.2, 1.2, 0.0001, unit, "regression", open=True)
        said = bisect_args(cp, **where)  # type: ignore[arg-type]
        run = bisect_options(cp, **where)  # type: ignore[arg-type]
        assert options(build_parser("bisect").parse_args(said)).pattern == run.pattern
        assert [s.series for s in match_series(history, "m", run.pattern)] == [sid]
        assert sid.label not in said  # the label is for people: never the argument


def test_a_time_search_is_sized_for_the_step_the_change_point_showed_within_the_minutes() -> None:
    a, b = "a" * 40, "b" * 40
    timed = bisect_args(_cp(a, b, "aten::mul", "seconds", 1.45), repo="r", results_dir="h",
                        backend="cpu", minutes=12.5)  # fmt: skip
    assert timed[:3] == ["bisect", a, b]
    assert timed[timed.index("--budget-minutes") + 1] == "12.50"  # the step's bound holds
    assert timed[timed.index("--step") + 1] == "45.0"  # sized for +45 %, not a fixed 48 rounds
    assert "--max-rounds" not in timed
    faster = bisect_args(_cp(a, b, "aten::mul", "seconds", 1 / 1.3), repo="r", results_dir="h",
                         backend="cpu", minutes=5)  # fmt: skip
    assert faster[faster.index("--step") + 1] == "30.0"
    exact = bisect_args(_cp(a, b, "aten::mul", "instructions", 1.2), repo="r", results_dir="h",
                        backend="cpu", minutes=5)  # fmt: skip
    assert "--step" not in exact and "--budget-minutes" in exact


def test_the_in_process_search_is_the_command_line_it_says(tmp_path: Path) -> None:
    """The step runs :func:`bisect_options` in process and says :func:`bisect_args`: the
    bisect command's own parser turns the said line into the very options run."""
    from neuronasv.ci.bisect_step import bisect_options
    from neuronasv.cli import build_parser
    from neuronasv.commands.bisect import options

    a, b = "a" * 40, "b" * 40
    for unit, ratio in (("seconds", 1.45), ("seconds", 1 / 1.3), ("instructions", 1.2)):
        cp = _cp(a, b, "aten::mul", unit, ratio)
        where = {"repo": str(tmp_path), "results_dir": "h", "backend": "cpu", "minutes": 12.5}
        said = bisect_args(cp, **where)  # type: ignore[arg-type]
        parsed = options(build_parser("bisect").parse_args(said))
        assert parsed == bisect_options(cp, **where)  # type: ignore[arg-type]


def test_the_token_is_gone_before_any_commit_of_the_range_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 38 item 5: the self-hosted bisect job holds a read-only token for the results
    branch and the culprit's PR; the step pulls with it, then removes it (and GITHUB_TOKEN)
    from its environment before a search runs the range's commits (their processes inherit
    the environment)."""
    from neuronasv.ci import bisect_step as step
    from neuronasv.ci.bisect_step import Range
    from neuronasv.errors import UsageError
    from neuronasv.steps import store as store_steps
    from neuronasv.steps.store import StoreRef

    shas = _repo(tmp_path / "repo", 3)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_not_a_real_token")
    monkeypatch.setenv("STORE_TOKEN", "ghs_store_token")
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    seen: dict[str, list[str | None]] = {"pull": [], "search": []}
    real_pull = store_steps.pull

    def pull(ref: StoreRef, out: str, **kw: object) -> object:
        seen["pull"].append(os.environ.get("STORE_TOKEN"))
        return real_pull(ref, out, **kw)

    def search(opts: object, **kw: object) -> object:
        seen["search"] += [os.environ.get("GITHUB_TOKEN"), os.environ.get("STORE_TOKEN")]
        raise UsageError("stopped by the test")

    monkeypatch.setattr("neuronasv.steps.store.pull", pull)
    monkeypatch.setattr("neuronasv.steps.measure.bisect", search)
    cp = _cp(shas[0], shas[2], "aten::mul", "instructions", 1.2)
    monkeypatch.setattr(step, "plan_ranges", lambda docs, git, rd: [Range(cp, 1, 2)])
    monkeypatch.setattr(step, "_history_docs", lambda repo, history, machines: [])
    done = step.bisect_step(
        str(tmp_path / "repo"), out=str(tmp_path / "out"), minutes=5.0, add=[],
        store=StoreRef(str(tmp_path / "repo"), remote=str(remote), token_env="STORE_TOKEN"),
    )  # fmt: skip
    assert done == 0
    assert seen == {"pull": ["ghs_store_token"], "search": [None, None]}
