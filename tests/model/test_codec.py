"""The declarative codecs: the bytes on disk are those the hand-written codecs wrote.

``tests/data/model/*`` were written by the hand-written ``to_json`` methods this codec
replaced (see ``tests/model/documents.py``); every fixture document under ``tests/data``
must read and write back unchanged, and older schema versions still read.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from neuronasv.errors import CorruptResultsError, SchemaVersionError
from neuronasv.model import FindingsDocument, ProfileDocument, RunSidecar
from neuronasv.model._codec import Document, Model, spec
from neuronasv.model.profile import PROFILE_SCHEMA_VERSION
from neuronasv.model.rounds import RoundsDocument
from tests.model import documents

DATA = Path(__file__).resolve().parents[1] / "data"
KINDS: dict[str, type[Document]] = {
    "neuronasv.profile": ProfileDocument,
    "neuronasv.findings": FindingsDocument,
    "neuronasv.run": RunSidecar,
    "neuronasv.rounds": RoundsDocument,
}


@pytest.mark.parametrize("name", sorted(documents.DOCUMENTS))
def test_golden_bytes_are_unchanged(name: str) -> None:
    text = (documents.GOLDEN / name).read_text(encoding="utf-8")
    doc = documents.DOCUMENTS[name]()
    assert doc.dumps() == text  # writing: same bytes as the hand-written codec
    again = type(doc).loads(text, source=name)
    assert again == doc  # reading: every field comes back
    assert again.dumps() == text


def _fixtures() -> list[Path]:
    out = []
    for p in sorted(DATA.rglob("*")):
        if p.suffix in (".json", ".neuronasv") and p.is_file():
            try:
                kind = json.loads(p.read_text(encoding="utf-8")).get("kind")
            except (ValueError, AttributeError):
                continue
            if kind in KINDS:
                out.append(p)
    return out


FIXTURES = _fixtures()


def test_the_fixtures_cover_every_document_kind() -> None:
    kinds = {json.loads(p.read_text(encoding="utf-8"))["kind"] for p in FIXTURES}
    assert kinds == set(KINDS)


def _added(old: object, new: object, where: str = "$") -> list[str]:
    """Keys ``new`` adds to ``old``; AssertionError where a value of ``old`` changed."""
    if isinstance(old, dict) and isinstance(new, dict):
        assert old.keys() <= new.keys(), f"{where}: dropped {sorted(old.keys() - new.keys())}"
        out = [f"{where}.{k}" for k in new.keys() - old.keys()]
        for k in old:
            out += _added(old[k], new[k], f"{where}.{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        assert len(old) == len(new), where
        pairs = enumerate(zip(old, new, strict=True))
        return [x for i, (a, b) in pairs for x in _added(a, b, f"{where}[{i}]")]
    # numbers are read as floats (``3`` -> ``3.0``, equal); no other type changes
    same = type(old) is type(new) or {type(old), type(new)} == {int, float}
    assert old == new and same, f"{where}: {old!r} -> {new!r}"
    return []


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_every_fixture_round_trips(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    cls = KINDS[data["kind"]]
    doc = cls.loads(text, source=str(path))
    out = doc.to_json()
    assert cls.from_json(out) == doc
    assert cls.loads(doc.dumps()).dumps() == doc.dumps()
    # Nothing is dropped or changed; only fields newer than the fixture are added (with
    # their defaults), as the hand-written codecs did.
    old = {k: v for k, v in data.items() if k not in ("schema_version", "forced")}
    added = _added(old, out)
    newer = {"$.schema_version", "$.forced", "$.work", "$.causes", "$.health", "signature", "basis"}
    assert all(a in newer or a.rsplit(".", 1)[-1] in newer for a in added), added


def test_version_1_profile_reads_without_signatures() -> None:
    data = json.loads((documents.GOLDEN / "profile.json").read_text(encoding="utf-8"))
    data["schema_version"] = 1
    for w in data["workloads"]:
        for o in w["ops"]:
            del o["signature"]
        if w["canary"]:
            w["canary"].pop("device_state", None)
    doc = ProfileDocument.from_json(data, source="v1.json")
    assert all(o.signature == () for w in doc.workloads for o in w.ops)
    assert doc.schema_version == PROFILE_SCHEMA_VERSION  # read as the current version
    assert doc.workloads[0].canary is not None and doc.workloads[0].canary.device_state == {}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_findings_written_before_one_estimate_per_row_are_refused_saying_what_to_do(
    version: int,
) -> None:
    """Schema 4 (issue 28): a row's verdict, interval and totals were separate figures
    before; they cannot be made one again, so an old document is refused (exit 5) with the
    command to run again, never half-read."""
    data = documents.findings().to_json()
    data["schema_version"] = version
    refused = f"schema version {version} is no longer read"
    with pytest.raises(SchemaVersionError, match=refused) as e:
        FindingsDocument.from_json(data, source="old.json")
    assert "run the command that wrote it" in (e.value.hint or "")
    assert e.value.exit_code == 5


@pytest.mark.parametrize("cls", list(KINDS.values()))
def test_unknown_versions_and_kinds_name_the_file(cls: type[Document]) -> None:
    data = {"kind": cls._kind, "schema_version": 99}
    with pytest.raises(SchemaVersionError, match=r"^x\.json: .* schema version 99 .*reads"):
        cls.from_json(data, source="x.json")
    with pytest.raises(CorruptResultsError, match=r"^x\.json: expected a '"):
        cls.from_json({"kind": "other", "schema_version": 1}, source="x.json")


def _set(data: dict, path: tuple, value: object) -> dict:  # type: ignore[type-arg]
    data = copy.deepcopy(data)
    target = data
    for p in path[:-1]:
        target = target[p]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


PROFILE = json.loads((documents.GOLDEN / "profile.json").read_text(encoding="utf-8"))
FINDINGS = json.loads((documents.GOLDEN / "findings.json").read_text(encoding="utf-8"))
ROUNDS = json.loads((documents.GOLDEN / "rounds.json").read_text(encoding="utf-8"))
W0, OP0 = ("workloads", 0), ("workloads", 0, "ops", 0)
WHERE_OP = r"^p\.json workload 'rmsnorm\.naive' op 'aten::mul': "


@pytest.mark.parametrize(
    ("cls", "data", "path", "value", "says"),
    [
        (ProfileDocument, PROFILE, (*W0, "backend"), KeyError,
         r"^p\.json workload 'rmsnorm\.naive': field 'backend' is missing"),
        (ProfileDocument, PROFILE, (*OP0, "calls_per_iter"), "3",
         WHERE_OP + r"field 'calls_per_iter' must be"),
        (ProfileDocument, PROFILE, (*OP0, "calls_per_iter"), float("inf"),
         WHERE_OP + r"field 'calls_per_iter' must be finite"),
        (ProfileDocument, PROFILE, (*OP0, "flops"), float("nan"),
         WHERE_OP + r"flops must be a finite number or null"),
        (ProfileDocument, PROFILE, (*OP0, "self_device_time_us", 1), float("-inf"),
         WHERE_OP + r"self_device_time_us\[1\] is not finite"),
        (ProfileDocument, PROFILE, (*OP0, "signature", 0), 3, WHERE_OP + r"signature\[0\]"),
        (ProfileDocument, PROFILE, (*W0, "ops"), KeyError, r"field 'ops' is missing"),
        (ProfileDocument, PROFILE, (*W0, "device_time_is_cpu"), "false",
         r"'device_time_is_cpu' must be true, false or null"),
        (ProfileDocument, PROFILE, (*W0, "iterations_per_sample"), 1.5,
         r"'iterations_per_sample' must be an integer"),
        (ProfileDocument, PROFILE, (*W0, "canary", "end_us"), [],
         r"workload 'rmsnorm\.naive' canary 'matmul256': end_us is empty"),
        (ProfileDocument, PROFILE, (*W0, "canary", "device_state"), [1],
         r"field 'device_state' must be an object"),
        (ProfileDocument, PROFILE, ("workloads", 0), [], r"^p\.json: workload entry must be"),
        (ProfileDocument, PROFILE, ("fingerprint", "torch"), {"x": 1},
         r"fingerprint\['torch'\] must be a string"),
        (FindingsDocument, FINDINGS, ("findings", 0, "state", "time"), "meh",
         r"^p\.json: unknown time axis 'meh'"),
        (FindingsDocument, FINDINGS, ("findings", 0, "state", "presence"), "gone",
         r"unknown presence 'gone'"),
        (FindingsDocument, FINDINGS, ("findings", 0, "estimate", "source"), "vibes",
         r"unknown estimate source 'vibes'"),
        (FindingsDocument, FINDINGS, ("findings", 0, "state", "confirmed"), "yes",
         r"'confirmed' must be true, false or null"),
        (FindingsDocument, FINDINGS, ("findings", 0, "estimate", "n_base"), "10",
         r"'n_base' must be an"),
        (FindingsDocument, FINDINGS, ("mode",), "both", r"unknown mode 'both'"),
        (FindingsDocument, FINDINGS, ("work", 0, "kind"), "x", r"unknown work change kind 'x'"),
        (FindingsDocument, FINDINGS, ("causes", 0, "direction"), "x",
         r"unknown cause direction 'x'"),
        (FindingsDocument, FINDINGS, ("causes", 0, "configs"), [["a"]],
         r"cause configs must be \[shape, dtype\] pairs"),
        (FindingsDocument, FINDINGS, ("change_points", 0, "kind"), "x", r"unknown change kind"),
        (FindingsDocument, FINDINGS, ("health", "status"), "x", r"unknown health status 'x'"),
        (FindingsDocument, FINDINGS, ("health", "checks", 0), 1, r"canary check must be an"),
        (FindingsDocument, FINDINGS, ("settings",), [], r"field 'settings' must be an object"),
        (FindingsDocument, FINDINGS, ("base",), "main", r"run reference must be an object"),
        (RoundsDocument, ROUNDS, ("rounds",), 0, r"rounds must be 1\.\.100, got 0"),
        (RoundsDocument, ROUNDS, ("max_rounds",), 1, r"max_rounds must be 2\.\.100, got 1"),
        (RoundsDocument, ROUNDS, ("measurements", 2, "round"), 4, r"round 4 outside 0\.\.3"),
        (RoundsDocument, ROUNDS, ("measurements", 0, "side"), "both", r"unknown side 'both'"),
        (RoundsDocument, ROUNDS, ("measurements", 0, "series", 0, "samples"), [],
         r"series\[0\]\.samples is empty"),
    ],
)  # fmt: skip
def test_bad_fields_are_named(
    cls: type[Document],
    data: dict,
    path: tuple,
    value: object,
    says: str,  # type: ignore[type-arg]
) -> None:
    with pytest.raises(CorruptResultsError, match=says):
        cls.from_json(_set(data, path, value), source="p.json")


def test_rounds_without_max_rounds_read_as_the_first_look() -> None:
    data = _set(ROUNDS, ("max_rounds",), KeyError)
    data["measurements"] = data["measurements"][:2]
    doc = RoundsDocument.from_json(data)
    assert doc.max_rounds == doc.rounds == 2
    assert RoundsDocument(base="a", head="b", rounds=3).to_json()["max_rounds"] == 3


# --- the codec itself, on a throwaway type -------------------------------------------------


@dataclass(frozen=True)
class _Leaf(Model):
    _what = "leaf"
    _context = ("leaf", "name")

    name: str
    size: float
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Tree(Document):
    _kind = "test.tree"
    _version = 2
    _readable = (1, 2)
    _source = "<tree>"

    leaves: tuple[_Leaf, ...]
    colour: Literal["red", "green"] = "red"
    best: _Leaf | None = None
    note: str | None = None
    extra: tuple[str, ...] = field(default=(), metadata=spec(omit_empty=True))


def test_a_new_field_is_one_line() -> None:
    tree = _Tree(leaves=(_Leaf("a", 1.5, ("x",)),), colour="green", best=_Leaf("b", 2))
    data = tree.to_json()
    assert data == {
        "kind": "test.tree", "schema_version": 2, "colour": "green", "note": None,
        "leaves": [{"name": "a", "size": 1.5, "tags": ["x"]}],
        "best": {"name": "b", "size": 2, "tags": []},
    }  # fmt: skip
    assert _Tree.loads(tree.dumps()) == tree
    assert _Tree.from_json({**data, "extra": ["e"]}).extra == ("e",)
    with pytest.raises(CorruptResultsError, match=r"^<tree> leaf 'a': field 'size' is missing"):
        _Tree.from_json({**data, "leaves": [{"name": "a"}]})
    with pytest.raises(CorruptResultsError, match=r"^<tree>: unknown colour 'blue'"):
        _Tree.from_json({**data, "colour": "blue"})


def test_a_type_without_a_codec_is_refused_when_first_used() -> None:
    @dataclass(frozen=True)
    class Odd(Model):
        pairs: tuple[tuple[int, int], ...]

    with pytest.raises(TypeError, match=r"Odd\.pairs: no codec"):
        Odd(((1, 2),)).to_json()


def test_every_model_type_has_a_codec() -> None:
    import neuronasv.model.rounds  # noqa: F401  (registers its types)

    def subclasses(cls: type[Model]) -> list[type[Model]]:
        out = []
        for sub in cls.__subclasses__():
            out += [sub, *subclasses(sub)]
        return out

    mine = [
        c
        for c in subclasses(Model)
        if c.__module__.startswith("neuronasv.") and dataclasses.is_dataclass(c)
    ]
    assert len(mine) >= 16
    for cls in mine:
        assert cls._codec_plan().keys, cls
