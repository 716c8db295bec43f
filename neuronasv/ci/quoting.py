"""Every value ``neuronasv init`` writes into a file, quoted by that file's rules.

``init`` fills its templates with values that come from outside (the folder's name, a git
branch, ``--from``, ``--workloads``); each placeholder names the format it sits in
(``{{name|yaml}}``), so a value is never pasted raw where it could end a string, start a
comment or an expression, or run code on import. Values that must keep a grammar (a
GitHub ``OWNER/REPO``, a commit hash, a module path) are validated here too.

- ``yaml``: a YAML double-quoted scalar, ASCII only (every other character escaped), so a
  quote, ``#``, a newline or ``${{`` stays inside the string;
- ``branch``: a GitHub Actions branch *filter* that matches exactly that branch (``+``,
  ``?``, ``*``, ``[``, ``]`` and a leading ``!`` are pattern syntax there: escaped), as YAML;
- ``json``: a JSON (and JSON5) string (``asv.conf.json``);
- ``pydoc``: text inside a Python ``\"\"\"`` docstring (quotes and backslashes escaped);
- ``py``: a Python string literal;
- ``raw``: only for values validated by their grammar (module, sha, repository, version).
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable, Mapping

from neuronasv.errors import UsageError

__all__ = [
    "fill",
    "github_repository",
    "module_name",
    "project_name",
    "py_doc",
    "py_str",
    "sha",
    "yaml_branch_filter",
    "yaml_str",
]

#: GitHub's owner (user or organisation) grammar: 1-39 letters, digits and single hyphens,
#: neither first nor last; a repository name: 1-100 of letters, digits, ``.``, ``_``, ``-``,
#: not ``.`` or ``..``.
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
_REPO = r"[A-Za-z0-9._-]{1,100}"
_REPOSITORY = re.compile(rf"({_OWNER})/({_REPO})")
_SHA = re.compile(r"[0-9a-f]{40}")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_]+)\|([a-z]+)\}\}")


def _escape(text: str, keep: Callable[[str], bool]) -> str:
    """Backslash escapes for every character ``keep`` refuses (``\\xNN``/``\\uNNNN``/
    ``\\UNNNNNNNN``, which Python and YAML double-quoted strings both read)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif keep(ch):
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def yaml_str(value: str) -> str:
    """``value`` as a YAML double-quoted scalar of printable ASCII (YAML 1.1 and 1.2)."""
    return '"' + _escape(value, lambda c: " " <= c <= "~") + '"'


def yaml_branch_filter(branch: str) -> str:
    """A ``push: branches:`` filter matching exactly ``branch``, as a YAML scalar.

    GitHub reads ``*``, ``?``, ``+``, ``[``, ``]`` and a leading ``!`` as pattern syntax,
    escaped with a backslash (docs: "Filter pattern cheat sheet").
    """
    pattern = re.sub(r"([*?+\[\]\\])", r"\\\1", branch)
    if pattern.startswith("!"):
        pattern = "\\" + pattern
    return yaml_str(pattern)


def unescape_branch_filter(pattern: str) -> str:
    """The branch a :func:`yaml_branch_filter` pattern matches (its YAML already read)."""
    return re.sub(r"\\(.)", r"\1", pattern)


def json_str(value: str) -> str:
    """``value`` as a JSON string (control characters escaped; the rest as UTF-8, which
    the json5 reader asv uses reads back: it does not join escaped surrogate pairs)."""
    return json.dumps(value, ensure_ascii=False)


def py_doc(value: str) -> str:
    """``value`` as text inside a ``\"\"\"`` docstring: no quote, backslash or control
    character survives unescaped (newlines stay, so a long name still reads)."""
    return _escape(value, lambda c: c == "\n" or c.isprintable())


def py_str(value: str) -> str:
    """``value`` as a Python double-quoted string literal."""
    return '"' + _escape(value, lambda c: c.isprintable()) + '"'


def _raw(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_./@+:#-]*", value):
        raise ValueError(f"not a validated value, cannot be written raw: {value!r}")
    return value


FILTERS: Mapping[str, Callable[[str], str]] = {
    "yaml": yaml_str,
    "branch": yaml_branch_filter,
    "json": json_str,
    "pydoc": py_doc,
    "py": py_str,
    "raw": _raw,
}


def fill(template: str, values: Mapping[str, str]) -> str:
    """The template with every ``{{name|format}}`` replaced by the quoted value.

    An unknown name or format, or a placeholder without a format, is a bug of the template
    (ValueError), never a blank in the output.
    """

    def one(m: re.Match[str]) -> str:
        name, fmt = m.group(1), m.group(2)
        if name not in values or fmt not in FILTERS:
            raise ValueError(f"template placeholder {m.group(0)}: unknown name or format")
        return FILTERS[fmt](values[name])

    text = _PLACEHOLDER.sub(one, template)
    if "{{" in text.replace("${{", ""):
        raise ValueError("template placeholder without a format (write {{name|format}})")
    return text


def github_repository(text: str, *, what: str = "--from") -> str:
    """``OWNER/REPO`` by GitHub's grammar, else a UsageError that shows what was given."""
    m = _REPOSITORY.fullmatch(text)
    if not m or m.group(2) in (".", ".."):
        raise UsageError(
            f"{what} {text!r} is not a GitHub repository (OWNER/REPO: letters, digits and"
            " hyphens for the owner; letters, digits, '.', '_' and '-' for the name)",
            hint="e.g. --from acme/neuronasv; the commit goes to --ref (40 hex digits)",
        )
    return text


def sha(text: str, *, what: str = "--ref") -> str:
    """A full commit hash (40 hex digits, lower-cased), else a UsageError."""
    if not _SHA.fullmatch(text.lower()):
        raise UsageError(
            f"{what} {text!r} is not a full commit hash (40 hex digits)",
            hint="a tag or branch moves; the workflows are pinned to a commit",
        )
    return text.lower()


def module_name(text: str) -> str:
    """A dotted module path Python can import (no keyword), else a UsageError."""
    if not _MODULE.fullmatch(text) or any(keyword.iskeyword(p) for p in text.split(".")):
        raise UsageError(f"--workloads {text!r} is not a module name (PKG.MODULE)")
    return text


def project_name(text: str) -> str:
    """A project name to title things with: any printable text, one line, not empty."""
    if not text.strip() or not text.isprintable():
        raise UsageError(
            f"the project name {text!r} is empty or holds control characters",
            hint="pass --project NAME",
        )
    return text
