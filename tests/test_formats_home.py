"""Each key format has one home, :mod:`neuronasv.keys` (issue 31, item 3).

The source of every module of the package is scanned for a second spelling of a key that
:mod:`neuronasv.keys` owns: the profile key ``workload[shape,dtype]``, the payload entry
``shape|dtype``, the payload file name ``safe_name(key) + ".json"``, a ``Config``
alias of the (workload, shape, dtype) tuple and that tuple built inline from a series
(``s.config`` says it). A module that needs one calls the function.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "neuronasv"
HOME = PKG / "keys.py"

#: format -> a pattern that finds it spelled in source.
FORMATS = {
    # f"{w}[{s},{d}]" (a message "name [shape,dtype]", with a space, is prose, not the key)
    "profile key workload[shape,dtype]": re.compile(r"\}\[\{[^{}]*\},\{[^{}]*\}\]"),
    # f"{shape}|{dtype}" as the whole string
    "results key shape|dtype": re.compile(r"""f(["'])\{[^{}]*\}\|\{[^{}]*\}\1"""),
    # safe_name(...) + ".json"
    "payload file name": re.compile(r"""safe_name\([^()]*\)\s*\+\s*(["'])\.json\1"""),
    # (s.workload, s.shape, s.dtype) built inline: `s.config` (SeriesId, WorkChange) says it;
    # `self.` is the property itself, and a call `Config(...)` builds the type
    "configuration tuple built inline": re.compile(
        r"(?<![\w])\((?!self\.)(\w[\w.]*)\.workload, \1\.shape, \1\.dtype\)"
    ),
    # Config = tuple[...] / _Config = tuple[...]
    "Config alias": re.compile(r"^_?\w*Config\s*(?::\s*\w+\s*)?=\s*tuple\[", re.M),
}


def spellings(root: Path) -> list[str]:
    """``path:line: format`` for every key format spelled outside :mod:`neuronasv.keys`."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "keys.py":
            continue
        text = path.read_text(encoding="utf-8")
        for what, pattern in FORMATS.items():
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{path.relative_to(root.parent)}:{line}: {what}")
    return out


def test_every_key_format_is_spelled_only_in_its_home() -> None:
    found = spellings(PKG)
    assert not found, "use neuronasv.keys instead of:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ('k = f"{w.name}[{w.shape},{w.dtype}]"\n', "profile key workload[shape,dtype]"),
        ('results[f"{shape}|{dtype}"] = x\n', "results key shape|dtype"),
        ("p = safe_name(key) + '.json'\n", "payload file name"),
        ("Config = tuple[str, str, str]\n", "Config alias"),
        ("key = (f.series.workload, f.series.shape, f.series.dtype)\n",
         "configuration tuple built inline"),
        ("_Config = tuple[str | None, str | None, str | None]\n", "Config alias"),
    ],
)
def test_the_scan_finds_each_format(tmp_path: Path, source: str, what: str) -> None:
    pkg = tmp_path / "neuronasv"
    pkg.mkdir()
    (pkg / "keys.py").write_text(source, encoding="utf-8")  # the home may spell it
    (pkg / "other.py").write_text("x = 1\n" + source, encoding="utf-8")
    assert spellings(pkg) == [f"neuronasv/other.py:2: {what}"]


def test_prose_is_not_a_key(tmp_path: Path) -> None:
    pkg = tmp_path / "neuronasv"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        'where = f"{name} [{shape},{dtype}] on {backend}"\n'
        'label = f"{tag}{w}|{shape}|{dtype}"\n',
        encoding="utf-8",
    )
    assert spellings(pkg) == []
