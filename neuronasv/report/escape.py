"""Escaping of untrusted text for GitHub markdown, workflow commands and mermaid.

Op names, benchmark params, branch labels and acknowledgement reasons come from code or
from people, and a PR comment is rendered by GitHub with the repository's authority. So
every such string goes through one of these functions before it reaches a renderer:

- :func:`md_text` — inline markdown text (paragraphs, list items, table cells): control
  and bidi characters removed, HTML special characters as entities, markdown punctuation
  backslash-escaped (``|`` included, so a table cannot be split), ``@`` and ``#`` followed
  by a zero-width joiner (no mentions, no issue cross-references), ``://`` and ``www.``
  broken by a zero-width space (no autolinks).
- :func:`md_code` — the same text as an inline code span (markdown, HTML and mentions are
  inert there); ``in_table=True`` escapes ``|``, which GitHub un-escapes before it parses
  the cell, so the code span still shows a plain ``|``.
- :func:`safe_url` — only ``http``/``https`` URLs, with characters that could end a
  markdown link destination percent-encoded; anything else becomes None.
- :func:`mermaid_label` — a conservative character set for labels inside a mermaid block.
- :func:`workflow_data` / :func:`workflow_property` — GitHub Actions workflow commands
  (``::warning title=...::...``), escaped the way ``@actions/core`` does.

Every function is pure and total: any ``str`` in, safe text out.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote, urlsplit

__all__ = [
    "ZWJ",
    "ZWSP",
    "clean",
    "md_code",
    "md_text",
    "mermaid_label",
    "safe_url",
    "workflow_data",
    "workflow_property",
]

ZWJ = "\u200d"  # zero-width joiner: breaks @mentions and #refs without visible change
ZWSP = "\u200b"  # zero-width space: breaks autolinks

#: Longest untrusted string we print (compiled-graph op names can be kilobytes long).
MAX_LEN = 160

# Markdown punctuation that can start emphasis, links, images, code, headings, tables,
# strikethrough or HTML-ish constructs inline. Backslash-escaping ASCII punctuation is
# always valid CommonMark, so over-escaping is harmless.
_MD_PUNCT = set("\\`*_{}[]()#+-.!|~:\"'")
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


def clean(text: str, *, max_len: int = MAX_LEN) -> str:
    """Make untrusted text one line of visible characters.

    Control characters (newlines included) become spaces, format characters (bidi
    overrides, zero-width characters) are dropped, runs of whitespace collapse, and text
    longer than ``max_len`` is cut with an ellipsis.
    """
    out: list[str] = []
    for ch in str(text):
        cat = unicodedata.category(ch)
        if cat == "Cc" or ch in "\u2028\u2029":
            out.append(" ")
        elif cat in ("Cf", "Cs", "Co", "Cn"):
            continue
        else:
            out.append(ch)
    one_line = " ".join("".join(out).split())
    if len(one_line) > max_len:
        one_line = one_line[: max_len - 1].rstrip() + "…"
    return one_line


def _defuse(text: str) -> str:
    """Break mentions, issue references and autolinks with zero-width characters."""
    text = text.replace("@", "@" + ZWJ).replace("#", "#" + ZWJ)
    return _AUTOLINK.sub(lambda m: m.group(1)[0] + ZWSP + m.group(1)[1:], text)


def md_text(text: str, *, max_len: int = MAX_LEN) -> str:
    """Untrusted text as inline GitHub markdown that renders as the literal text."""
    # Defuse first: once ``:`` and ``.`` are backslash-escaped the patterns would hide.
    s = _defuse(clean(text, max_len=max_len))
    out: list[str] = []
    for ch in s:
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _MD_PUNCT:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def md_code(text: str, *, in_table: bool = False, max_len: int = MAX_LEN) -> str:
    """Untrusted text as an inline code span (fence longer than any backtick run inside).

    Args:
        text: the untrusted string.
        in_table: escape ``|`` as ``\\|`` (GitHub removes the backslash before parsing the
            cell; outside a table the backslash would show, so only set this in tables).
        max_len: cut longer text with an ellipsis.
    """
    s = clean(text, max_len=max_len)
    if not s:
        return "` `"
    if in_table:
        s = s.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s[0] == " " and s[-1] == " ") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


# Characters allowed unencoded in a URL we emit: RFC 3986 unreserved + reserved, minus
# the ones that end or confuse a markdown link destination or an HTML attribute.
_URL_SAFE = "-._~:/?#@!$&*+,;=%"


def safe_url(url: str | None) -> str | None:
    """An ``http(s)`` URL safe inside ``[text](url)``, or None if it is not one.

    ``javascript:``, ``data:`` and relative URLs are refused; spaces, quotes, brackets,
    parentheses and angle brackets are percent-encoded.
    """
    if not url:
        return None
    url = url.strip()
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return quote(url, safe=_URL_SAFE)


_MERMAID_OK = re.compile(r"[^A-Za-z0-9 ._:/+\-x×µ%·]")


def mermaid_label(text: str, *, max_len: int = 60) -> str:
    """Text for a quoted mermaid label: a small safe character set, other characters ``_``."""
    return _MERMAID_OK.sub("_", clean(text, max_len=max_len))


def workflow_data(text: str) -> str:
    """Escape the message part of a workflow command (``::warning ...::MESSAGE``)."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """Escape a property value of a workflow command (``title=VALUE``)."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")
