"""The reusable workflows' steps: shards, machine names, outputs, the torchless install."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronasv.ci import flows
from neuronasv.ci.outputs import set_output
from neuronasv.errors import UsageError


def test_shards_get_disjoint_machine_names() -> None:
    assert flows.parse_shards("", "h200") == [{"name": "all", "bench": "", "machine": "h200"}]
    two = flows.parse_shards('[{"name": "a", "bench": "x"}, {"name": "b"}]', "h200")
    assert [s["machine"] for s in two] == ["h200-a", "h200-b"]
    assert two[1]["bench"] == ""


@pytest.mark.parametrize(
    "text", ["not json", "[]", '[{"name": "a b"}]', '[{"name": "a"}, {"name": "a"}]', "[1]"]
)
def test_bad_shard_lists_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        flows.parse_shards(text, "m")


def test_set_output_appends_to_github_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    set_output("a", "1", {"GITHUB_OUTPUT": str(out)})
    set_output("b", "x y", {"GITHUB_OUTPUT": str(out)})
    assert out.read_text() == "a=1\nb=x y\n"
    assert capsys.readouterr().out == "a=1\nb=x y\n"
    with pytest.raises(ValueError):
        set_output("c", "two\nlines", {})


def test_torchless_requirements_keep_every_other_dependency() -> None:
    reqs = flows.torchless_requirements()
    names = [r.split(">")[0].split("=")[0].strip().lower() for r in reqs]
    assert "torch" not in names and "scipy" in names and "asv" in names
