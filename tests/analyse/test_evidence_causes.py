"""Work changes between profiles, and findings grouped into causes (pure, synthetic)."""

from __future__ import annotations

from neuronasv.analyse.causes import find_causes
from neuronasv.analyse.evidence import work_changes
from neuronasv.model import OpProfile, SeriesId, WorkChange, WorkloadProfile
from tests.builders import finding


def prof(shape: str, dtype: str, *ops: OpProfile, name: str = "rmsnorm.naive") -> WorkloadProfile:
    return WorkloadProfile(name, "cpu", shape, dtype, (10.0, 11.0), tuple(ops))


def op(name: str, calls: float = 1.0, sig: tuple[str, ...] = (), nbytes: float | None = None):
    return OpProfile(name, calls, (2.0, 2.0), (2.0, 2.0), bytes=nbytes, signature=sig)


def test_identical_profiles_have_no_work_change() -> None:
    p = prof("4x512", "bfloat16", op("aten::mul", 3, ("3×bf16[4,512]",), 100.0))
    assert work_changes([p], [p]) == ()


def test_every_kind_of_change() -> None:
    base = prof(
        "4x512",
        "bfloat16",
        op("aten::mul", 3, ("3×bf16[4,512]",), 300.0),
        op("aten::add", 1, ("1×bf16[4,1]",), 16.0),
        op("aten::gone", 1, ("1×bf16[4]",)),
        op("aten::same", 1, ("1×bf16[4]",), 8.0),
        op("aten::nosig", 2),
    )
    head = prof(
        "4x512",
        "bfloat16",
        op("aten::mul", 4, ("4×bf16[4,512]",), 400.0),
        op("aten::add", 1, ("1×bf16[4,512]",), 4096.0),
        op("aten::fill_", 1, ("1×bf16[4,512]",)),
        op("aten::same", 1, ("1×bf16[4]",), 8.0),
        op("aten::nosig", 2, ("2×bf16[4]",)),  # one side without a signature: no change
    )
    got = {w.op: w for w in work_changes([base], [head])}
    assert {k: w.kind for k, w in got.items()} == {
        "aten::mul": "calls",
        "aten::add": "shapes",
        "aten::gone": "removed",
        "aten::fill_": "new",
    }
    assert got["aten::add"].bytes_head == 4096.0 and got["aten::fill_"].time_head == 2e-6


def test_configurations_only_on_one_side_are_not_compared() -> None:
    a = prof("4x512", "bfloat16", op("aten::mul"))
    b = prof("8x512", "bfloat16", op("aten::add"))
    assert work_changes([a], [b]) == ()


def _total(shape: str, dtype: str, verdict: str, ratio: float, wl: str = "rmsnorm.naive"):
    return finding(SeriesId("b", (), wl, shape, dtype), verdict, base=1.0, head=ratio)


def _w(shape: str, dtype: str, o: str, kind: str = "shapes", wl: str = "rmsnorm.naive"):
    return WorkChange(wl, shape, dtype, o, kind, 1.0, 1.0, 16.0, 4096.0)  # type: ignore[arg-type]


def test_one_code_change_across_shapes_and_dtypes_is_one_cause() -> None:
    shapes = [("4x512", "bfloat16"), ("4x512", "float32"), ("8x1024", "bfloat16")]
    findings = [_total(s, d, "regression", 1.4 + i / 10) for i, (s, d) in enumerate(shapes)]
    findings.append(_total("4x512", "bfloat16", "unchanged", 1.0, wl="rmsnorm.fused"))
    work = [_w(s, d, "aten::add") for s, d in shapes]
    work.append(_w("4x512", "float32", "aten::_to_copy", "calls"))  # a dtype-only extra
    (cause,) = find_causes(findings, work)
    assert cause.kind == "work" and cause.direction == "regression"
    assert cause.workload == "rmsnorm.naive" and len(cause.configs) == 3
    assert cause.ops[0] == "aten::add" and "aten::_to_copy" in cause.ops


def test_unrelated_changes_in_one_workload_are_separate_causes() -> None:
    findings = [_total("a", "bf16", "unchanged", 1.0), _total("b", "bf16", "unchanged", 1.0)]
    work = [_w("a", "bf16", "aten::add"), _w("b", "bf16", "aten::mul", "calls")]
    causes = find_causes(findings, work)
    assert len(causes) == 2 and {c.direction for c in causes} == {"unconfirmed"}


def test_timing_causes_and_refuted_times() -> None:
    findings = [
        _total("a", "bf16", "regression", 1.2, wl="w.x"),
        _total("b", "bf16", "regression", 1.3, wl="w.x"),
        _total("a", "bf16", "improvement", 0.8, wl="w.y"),
        # A slower time the re-measurement refuted (its time is then not decided) is not a
        # cause.
        finding(
            SeriesId("b", (), "w.z", "a", "bf16"), "noisy", base=1.0, head=1.2, source="rounds"
        ),
        finding(SeriesId("plain.time_x"), "regression", base=1.0, head=2.0),
    ]
    causes = find_causes(findings, [])
    assert [(c.workload, c.direction, len(c.configs)) for c in causes] == [
        ("plain.time_x", "regression", 0),
        ("w.x", "regression", 2),
        ("w.y", "improvement", 1),
    ]
