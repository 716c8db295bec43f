"""Module series on the site: under their workload, ops nested beneath their module."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from neuronasv.model import RunSidecar
from neuronasv.publish import PublishOptions, from_history, publish_site
from neuronasv.steps.publish import newest_op_modules as _newest_op_modules
from tests.report.test_module_chain import BASE, HEAD, _history, _profile

EM = "\u2003"


def _labels(page: str) -> list[str]:
    return [html.unescape(x) for x in re.findall(r'<span class="opname">(.*?)</span>', page)]


def test_module_rows_lead_their_ops_in_tree_order(tmp_path: Path) -> None:
    data = from_history(_history(_profile(1.0), _profile(1.3)))
    md = data.machines[0]
    assert md.op_modules[("transformer.block", "1x2048x4096x32", "bfloat16", "aten::silu")] == (
        "block.mlp"
    )
    publish_site(data, tmp_path, options=PublishOptions())
    index = (tmp_path / "index.html").read_text()
    assert "modules and ops</button>" in index
    labels = _labels(index)
    stripped = [x.replace(EM, "") for x in labels]
    assert (
        stripped.index("▸ block") < stripped.index("▸ block.attn") < stripped.index("▸ block.mlp")
    )
    # each op right below its module (largest share), indented one level deeper
    mlp = stripped.index("▸ block.mlp")
    assert labels[mlp] == f"{EM}▸ block.mlp"
    assert f"{EM * 2}aten::silu" in labels[mlp:]
    assert stripped.index("aten::silu") > mlp
    assert stripped.index("aten::mm") == mlp + 1  # 709.7 of its 1058.7 µs are in the MLP
    assert stripped.index("aten::_cudnn_attention_forward") < mlp
    # the workload page lists the same rows, with the module series as their own rows
    page = next((tmp_path / "m").rglob("transformer.block-*.html"))
    meta = re.search(
        r'<script type="application/json" id="meta">(.*?)</script>', page.read_text(), re.S
    )
    assert meta is not None
    rows = [r["label"].replace(EM, "") for r in json.loads(meta.group(1))["rows"]]
    assert "▸ block.mlp" in rows and rows[0] == "total"


def test_publish_reads_op_placement_from_the_newest_sidecar(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "h200"
    folder.mkdir(parents=True)
    for commit, prof in ((BASE, _profile(1.0)), (HEAD, _profile(1.3))):
        sc = RunSidecar(machine="h200", commit_hash=commit, env_name="existing-py",
                        profiles=(prof,))  # fmt: skip
        (folder / f"{commit[:8]}-existing-py.neuronasv").write_text(sc.dumps())
        (folder / f"{commit[:8]}-existing-py.json").write_text("{}")  # read: the sidecar only
    got = _newest_op_modules(str(tmp_path / "results"), "h200", [BASE, HEAD])
    assert got[("transformer.block", "1x2048x4096x32", "bfloat16", "aten::cat")] == "block.attn"
    assert _newest_op_modules(str(tmp_path / "results"), "h200", ["c" * 40]) == {}
    (folder / f"{HEAD[:8]}-existing-py.neuronasv").write_text("{broken")
    assert _newest_op_modules(str(tmp_path / "results"), "h200", [BASE, HEAD]) == {}
