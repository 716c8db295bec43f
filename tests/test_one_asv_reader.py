"""Every reader of asv results goes through ``neuronasv/store/asvresults.py`` (issue 31, item 3).

A second parser of asv's results format shows itself by what only such a parser names:
the format's field and column names (``result_columns``, asv's ``stats_*`` columns) as
string literals, or the evaluation of asv's ``repr``-written params (``literal_eval``).
The package's source is read with ``ast`` (a docstring that mentions a name is not a
use: only a literal that *is* the name counts); outside the reader's home, none may
appear.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "neuronasv"
HOME = "store/asvresults.py"

#: asv's results-file names that only a parser of the format needs (asv/results.py).
FORMAT_NAMES = {
    "result_columns",
    "stats_ci_99_a",
    "stats_ci_99_b",
    "stats_q_25",
    "stats_q_75",
    "stats_number",
    "stats_repeat",
}


def asv_format_uses(path: Path, root: Path) -> list[str]:
    """``file:line: what`` for each use of the asv results format in ``path``."""
    rel = path.relative_to(root).as_posix()
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and node.value in FORMAT_NAMES:
            found.append((node.lineno, f"{rel}:{node.lineno}: {node.value!r}"))
        elif (isinstance(node, ast.Name) and node.id == "literal_eval") or (
            isinstance(node, ast.Attribute) and node.attr == "literal_eval"
        ):
            found.append((node.lineno, f"{rel}:{node.lineno}: literal_eval"))
    return [use for _line, use in sorted(found)]


def second_parsers(root: Path) -> list[str]:
    """Every use of the format outside the reader's home."""
    return [
        use
        for p in sorted(root.rglob("*.py"))
        if p.relative_to(root).as_posix() != HOME
        for use in asv_format_uses(p, root)
    ]


def test_no_second_asv_results_parser() -> None:
    assert second_parsers(PKG) == []


def test_the_reader_is_where_the_check_looks() -> None:
    """The check sees the real reader (so a renamed field would not make it blind)."""
    uses = asv_format_uses(PKG / HOME, PKG)
    assert any("'result_columns'" in u for u in uses)
    assert any("literal_eval" in u for u in uses)


def test_the_check_can_fail(tmp_path: Path) -> None:
    root = tmp_path / "neuronasv"
    (root / "run").mkdir(parents=True)
    (root / "store").mkdir()
    (root / HOME).write_text('COLS = "result_columns"\n')  # the home: allowed
    (root / "run" / "mine.py").write_text(
        '"""Reads result_columns itself (a docstring: not a use)."""\n'
        "import ast\n"
        "from ast import literal_eval\n"
        "def rows(doc):\n"
        '    cols = doc["result_columns"]\n'
        '    q = cols.index("stats_q_25")\n'
        "    return ast.literal_eval(cols[q])\n"
    )
    assert second_parsers(root) == [
        "run/mine.py:5: 'result_columns'",
        "run/mine.py:6: 'stats_q_25'",
        "run/mine.py:7: literal_eval",
    ]


# -- one reader of a results folder (issue 40 item 3) --------------------------------

#: Where a results folder is listed: the column reader (``load_columns``: regressions'
#: and the site's matrices) and its point view (``load_history``: compare, bisect, the
#: api); ``asvresults`` is the format's home (the listing itself).
FOLDER_READERS = {"store/asvresults.py", "store/columns.py", "store/history.py"}
#: Where a file's rows are parsed: the column reader only (the point view reads its
#: ``FileColumns``).
ROW_PARSER = {"store/asvresults.py", "store/columns.py"}
#: The one home of the layout codec (a file's (benchmark, params, SeriesId) entries, kept
#: once per distinct layout by content hash) and of the parse cache's entries.
LAYOUT_HOME = "store/columns.py"
#: What only a reader of a whole folder calls: the folder listing and the row parse.
READER_CALLS = {"result_paths": FOLDER_READERS, "parse_row": ROW_PARSER}


def folder_reader_uses(path: Path, root: Path) -> list[str]:
    """``file:line: what`` for each sign of a results-folder reader in ``path``: a call of
    the folder listing or the row parse, or a function or class of its own whose name is
    a layout's (a second layout codec: ``_layout_id``, ``Layouts`` ...)."""
    rel = path.relative_to(root).as_posix()
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = getattr(f, "id", None) or getattr(f, "attr", "")
            if name in READER_CALLS and rel not in READER_CALLS[name]:
                found.append((node.lineno, f"{rel}:{node.lineno}: {name}()"))
        elif (
            isinstance(node, (ast.FunctionDef, ast.ClassDef))
            and "layout" in node.name.lower()
            and rel != LAYOUT_HOME
        ):
            found.append((node.lineno, f"{rel}:{node.lineno}: layout codec {node.name}"))
    return [use for _line, use in sorted(found)]


def second_folder_readers(root: Path) -> list[str]:
    return [use for p in sorted(root.rglob("*.py")) for use in folder_reader_uses(p, root)]


def test_one_reader_of_a_results_folder() -> None:
    assert second_folder_readers(PKG) == []


def test_the_folder_reader_is_where_the_check_looks() -> None:
    """The allowed homes hold what the check looks for (a rename would not blind it)."""
    text = (PKG / LAYOUT_HOME).read_text(encoding="utf-8")
    assert "def layout_id(" in text and "class Layouts" in text
    assert "result_paths(" in text and "parse_row(" in text


def test_the_folder_check_can_fail(tmp_path: Path) -> None:
    """A second scan of the folder with its own copy of the layout codec is named."""
    root = tmp_path / "neuronasv"
    (root / "publish").mkdir(parents=True)
    (root / "store").mkdir()
    (root / LAYOUT_HOME).write_text("def layout_id(x):\n    return result_paths(x)\n")
    (root / "publish" / "scan.py").write_text(
        "from neuronasv.store.asvresults import result_paths\n"
        "def _layout_id(layout):\n"
        "    return hash(layout)\n"
        "class _Layouts:\n"
        "    pass\n"
        "def scan(folder, reader):\n"
        "    for p in result_paths(folder):\n"
        "        reader.parse_row(p)\n"
    )
    assert second_folder_readers(root) == [
        "publish/scan.py:2: layout codec _layout_id",
        "publish/scan.py:4: layout codec _Layouts",
        "publish/scan.py:7: result_paths()",
        "publish/scan.py:8: parse_row()",
    ]
