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
- workflow commands (``::warning title=...::...``) are escaped in their one home,
  :func:`neuronasv.log.workflow_data` / :func:`neuronasv.log.workflow_property` (the
  Actions log handler writes them too).

By type, not by call site: a markdown renderer first passes its document through
:func:`inert_model`, which walks the model's fields by their declared types and makes
every untrusted string (every ``str`` that is not a ``Literal`` of our own vocabulary or
an address checked by :func:`safe_url`) :func:`inert`: one line, and every construct that
could come alive in markdown or HTML — a tag or comment (``<``), a link or image
(``](``, ``][``), a mention (``@``), an issue reference or heading (``#``), an autolink
(``://``, ``www.``), a hidden marker (``<!--``) — broken by an invisible joiner. The
visible text is unchanged, so a value shows the same in a code span, a table cell or a
sentence, and a call site that forgets :func:`md_text`/:func:`md_code` can garble a
line's emphasis at worst, never post a live link, mention, heading, tag or marker.

Every function is pure and total: any ``str`` in, safe text out.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import re
import typing
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

__all__ = [
    "ZWJ",
    "ZWSP",
    "clean",
    "html_code",
    "html_text",
    "inert",
    "inert_model",
    "md_code",
    "md_text",
    "mermaid_label",
    "plain_model",
    "safe_url",
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


def _visible(text: str) -> str:
    """Control characters as spaces, format/unassigned characters dropped (no cut)."""
    if text.isascii() and text.isprintable():
        return text  # the common case, without a per-character look-up
    out: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Cc" or ch in "\u2028\u2029":
            out.append(" ")
        elif cat not in ("Cf", "Cs", "Co", "Cn"):
            out.append(ch)
    return "".join(out)


@functools.lru_cache(maxsize=1 << 16)  # names repeat across a document's findings
def inert(text: str) -> str:
    """``text`` on one line with every live markdown/HTML construct broken invisibly.

    Idempotent (joiners from an earlier pass are dropped first) and length-preserving
    apart from the joiners, so identities built from inert parts still match.
    """
    s = _visible(str(text))
    s = s.replace("<", "<" + ZWJ).replace("](", "]" + ZWJ + "(").replace("][", "]" + ZWJ + "[")
    return _defuse(s)


#: Fields that hold addresses: :func:`safe_url` decides whether they become links.
_ADDRESS_FIELDS = frozenset({"trace_url", "links"})

_M = TypeVar("_M")


def _may_hold_text(tp: Any) -> bool:
    """Can a value of declared type ``tp`` contain an untrusted string? ``Literal`` values
    are our own vocabulary; numbers and flags hold no text."""
    if tp is str or tp is Any or dataclasses.is_dataclass(tp):
        return True
    if typing.get_origin(tp) is typing.Literal:
        return False
    args = typing.get_args(tp)
    if args:
        return any(_may_hold_text(a) for a in args if a is not Ellipsis)
    return tp not in (float, int, bool, type(None))


@functools.cache
def _text_fields(cls: type) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` that can hold untrusted text (by declared type)."""
    hints = typing.get_type_hints(cls)
    return tuple(
        f.name
        for f in dataclasses.fields(cls)
        if f.name not in _ADDRESS_FIELDS and _may_hold_text(hints[f.name])
    )


_SCALARS = (float, int, bool)


def _map_text(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` with ``fn`` applied to every untrusted string inside it, by type."""
    if value is None or type(value) in _SCALARS:
        return value
    if isinstance(value, str):
        return fn(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for name in _text_fields(type(value)):
            old = getattr(value, name)
            new = _map_text(old, fn)
            if new != old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, (tuple, list)):
        items = (_map_text(v, fn) for v in value)  # a NamedTuple (keys.Config) takes fields
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, Mapping):
        return {_map_text(k, fn): _map_text(v, fn) for k, v in value.items()}
    return value


def inert_model(obj: _M) -> _M:
    """``obj`` (a model value: document, finding, change point) with every untrusted
    string made :func:`inert`, found by the fields' declared types (markdown, HTML)."""
    return typing.cast(_M, _map_text(obj, inert))


def plain_model(obj: _M) -> _M:
    """``obj`` with every untrusted string on one line of visible characters (plain-text
    views: no planted line, no terminal escape sequence), by the fields' declared types."""
    return typing.cast(_M, _map_text(obj, _visible))


def _defuse(text: str) -> str:
    """Break mentions, issue references and autolinks with zero-width characters."""
    text = text.replace("@", "@" + ZWJ).replace("#", "#" + ZWJ)
    return _AUTOLINK.sub(lambda m: m.group(1)[0] + ZWSP + m.group(1)[1:], text)


def _unmark(text: str) -> str:
    """Break HTML comment openers, so no hidden marker (ours or another key's) is planted
    in the raw body even where the text is shown inside a code span."""
    return text.replace("<!--", "<!" + ZWJ + "--")


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


def html_text(text: str, *, max_len: int = MAX_LEN) -> str:
    """Untrusted text inside an HTML block (``<summary>``), where markdown escapes do not
    apply (a backslash shows as a backslash): one line, mentions and autolinks broken,
    ``& < > " '`` as entities."""
    return html.escape(_defuse(clean(text, max_len=max_len)), quote=True)


def html_code(text: str, *, max_len: int = MAX_LEN) -> str:
    """Untrusted text as ``<code>…</code>`` inside an HTML block (see :func:`html_text`)."""
    return f"<code>{html_text(text, max_len=max_len)}</code>"


def md_code(text: str, *, in_table: bool = False, max_len: int = MAX_LEN) -> str:
    """Untrusted text as an inline code span (fence longer than any backtick run inside).

    Args:
        text: the untrusted string.
        in_table: escape ``|`` as ``\\|`` (GitHub removes the backslash before parsing the
            cell; outside a table the backslash would show, so only set this in tables).
        max_len: cut longer text with an ellipsis.
    """
    s = _unmark(clean(text, max_len=max_len))
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
