"""Every value ``neuronasv init`` writes is quoted by its file's rules: hostile folder, project,
branch and ``--from`` values stay strings, or are refused before anything is written."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import json5
import pytest
import yaml

from neuronasv.ci import quoting, scaffold
from neuronasv.ci.quoting import unescape_branch_filter
from neuronasv.errors import UsageError

SHA = "0123456789abcdef0123456789abcdef01234567"
PIN = ["--ref", SHA, "--from", "acme/neuronasv"]
HOSTILE = [
    'x"""\nimport os; os.system("touch PWNED")\n"""',
    'x"""; import os; os.system("touch PWNED") #',
    "trailing backslash \\",
    "quote ' and \" and #comment",
    "${{ secrets.GITHUB_TOKEN }}",
    "a]\n    secrets: inherit\n#",
    "tab\tand\x7fdel\x00nul\x1b[31m",
    "emoji 🦀 and \u2028 line sep and \ud7ff",
    "- [ { } ] , & * ! | > % @ `",
    "yes",
    "0x10",
]


def nx(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronasv", *args], cwd=repo,
                          capture_output=True, text=True, check=False)  # fmt: skip


@pytest.mark.parametrize("value", HOSTILE)
def test_yaml_and_python_literals_read_back_as_the_value(value: str) -> None:
    assert yaml.safe_load(f"k: {quoting.yaml_str(value)}\n") == {"k": value}
    assert quoting.yaml_str(value).isascii()
    assert ast.literal_eval(quoting.py_str(value)) == value
    doc = f'"""{quoting.py_doc(value)}"""'
    tree = ast.parse(doc + "\n")
    assert len(tree.body) == 1 and ast.literal_eval(doc) == value
    assert json5.loads(quoting.json_str(value)) == value


@pytest.mark.parametrize("branch", ["release+1", "!neg", "a[b]", "x?y", "feat/a*b", "a,b"])
def test_a_branch_filter_matches_exactly_that_branch(branch: str) -> None:
    read = yaml.safe_load(f"b: [{quoting.yaml_branch_filter(branch)}]")["b"][0]
    assert unescape_branch_filter(read) == branch
    assert not re.search(r"(?<!\\)[+*?\[\]]", read) and not read.startswith("!")


def test_every_template_placeholder_names_its_format() -> None:
    """`raw` only for values validated by their grammar."""
    folder = resources.files("neuronasv.ci").joinpath("templates")
    raw_ok = {"module", "version", "ident", "docs"}
    for entry in folder.iterdir():
        text = entry.read_text("utf-8")
        assert not re.search(r"\{\{[A-Za-z_]+\}\}", text), entry.name
        for name, fmt in re.findall(r"\{\{([A-Za-z_]+)\|([a-z]+)\}\}", text):
            assert fmt in quoting.FILTERS, (entry.name, fmt)
            assert fmt != "raw" or name in raw_ok, (entry.name, name)
    with pytest.raises(ValueError, match="without a format"):
        quoting.fill("x {{project}}", {"project": "p"})
    with pytest.raises(ValueError, match="cannot be written raw"):
        quoting.fill("{{v|raw}}", {"v": "a b"})


@pytest.mark.parametrize("project", [p for p in HOSTILE if p.isprintable()])
def test_hostile_project_names_are_quoted_everywhere(tmp_path: Path, project: str) -> None:
    """Issue 29: the project name was pasted raw into generated Python; a name with `\"\"\"`
    ran code when benchmarks/__init__.py was imported."""
    src = scaffold.Source("acme/neuronasv", SHA)
    files = scaffold.plan(str(tmp_path), project=project, module="wl", branch="main", source=src)
    assert json5.loads(files["asv.conf.json"])["project"] == project
    for rel, text in files.items():
        if rel.endswith(".py"):
            tree = ast.parse(text)  # a syntax error would be an injection's first sign
            assert ast.get_docstring(tree, clean=False) is not None, rel
            assert "PWNED" not in "".join(
                ast.unparse(n) for n in tree.body if not isinstance(n, ast.Expr)
            ), rel
        if rel.endswith(".yml"):
            assert "secrets" not in yaml.safe_load(text)["jobs"]["comment" if "comment" in rel
                                                              else "pr"]  # fmt: skip
    init = ast.parse(files["benchmarks/__init__.py"])
    assert project in str(ast.get_docstring(init, clean=False))


@pytest.mark.parametrize("name", ['evil"""x', "we'ird #1", "a]b"])
def test_a_hostile_folder_name_runs_nothing_on_import(tmp_path: Path, name: str) -> None:
    repo = tmp_path / name
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    out = nx(repo, "init", *PIN)
    assert out.returncode == 0, out.stderr
    r = subprocess.run([sys.executable, "-c", "import benchmarks; print(benchmarks.__doc__)"],
                       cwd=repo, capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0 and name in r.stdout, r.stderr
    assert json5.loads((repo / "asv.conf.json").read_text())["project"] == name
    assert not list(repo.rglob("PWNED"))


@pytest.mark.parametrize(
    "branch", ['we"ird', "x#y", "a]b", "release+1", "{x}", "a,b", "!neg", "sp%ce&"]
)
def test_hostile_branch_names_stay_one_exact_filter(tmp_path: Path, branch: str) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    out = nx(repo, "init", "--branch", branch, *PIN)
    assert out.returncode == 0, out.stderr
    wf = yaml.safe_load((repo / ".github/workflows/neuronasv.yml").read_text())
    assert [unescape_branch_filter(b) for b in wf[True]["push"]["branches"]] == [branch]
    assert json5.loads((repo / "asv.conf.json").read_text())["branches"] == [branch]
    check = nx(repo, "init", "--check", *PIN)
    assert check.returncode == 0, check.stdout


@pytest.mark.parametrize(
    "source",
    [
        "o/r\n    secrets: inherit\n#",
        "evil/x@main #",
        "evil/x@main",
        "-o/r",
        "o-/r",
        "o--o/r",
        "o/r/extra",
        "o/..",
        "o/.",
        "o/r'",
        "o/r#",
        "",
        "a" * 40 + "/r",
        "o/" + "r" * 101,
    ],
)
def test_hostile_from_is_refused_before_anything_is_written(tmp_path: Path, source: str) -> None:
    """Issue 29: `--from $'o/r\\n    secrets: inherit\\n#'` gave the job `secrets: inherit`;
    `'evil/x@main #'` commented the pin out."""
    with pytest.raises(UsageError):
        quoting.github_repository(source)
    repo = tmp_path / "r"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    out = nx(repo, "init", "--ref", SHA, "--from", source)
    assert out.returncode == 2, out.stdout
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


@pytest.mark.parametrize("good", ["acme/neuronasv", "a/b", "A-1/x.y_z-", "o/r.git", "o/.hidden"])
def test_github_names_by_their_grammar(good: str) -> None:
    assert quoting.github_repository(good) == good


@pytest.mark.parametrize("ref", ["main", "v1.0", SHA[:12], SHA + "0", "g" * 40, f"{SHA} #"])
def test_ref_is_a_full_hash(ref: str) -> None:
    with pytest.raises(UsageError, match="not a full commit hash"):
        quoting.sha(ref)
    assert quoting.sha(SHA.upper()) == SHA


def test_a_project_name_with_control_characters_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    out = nx(repo, "init", "--project", "a\nb", *PIN)
    assert out.returncode == 2 and "control characters" in out.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git"]
