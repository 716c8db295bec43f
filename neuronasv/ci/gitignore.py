"""The output folders ``neuronasv init`` adds to ``.gitignore``, edited safely.

Every folder the documented commands write into the repository by default is listed: asv's
and ``run``'s ``.asv/`` (results, html, environments, traces), ``publish``'s ``site/``,
``doctor --neuron-check``'s ``neuron-check/`` and ``demo``'s ``out/demo/``. A folder git
already ignores (by any pattern of the repository's ``.gitignore`` files or
``.git/info/exclude``; ``git check-ignore`` decides) is not added again, and one holding
tracked files is the user's own (left alone, and said).

The edit appends, after a newline when the file does not end with one (so ``node_modules``
never becomes ``node_modules.asv/``), and never follows a symbolic link: a linked
``.gitignore`` is left as it is and the lines to add are printed instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from neuronasv.store.git import Git

__all__ = ["ENTRIES", "Entry", "add_lines", "missing"]


@dataclass(frozen=True)
class Entry:
    """A ``.gitignore`` line, a path it must ignore, and the command that writes there."""

    line: str
    probe: str
    writer: str


ENTRIES = (
    Entry(".asv/", ".asv/results", "neuronasv run (asv results, html, traces)"),
    Entry("/site/", "site/index.html", "neuronasv publish"),
    Entry("/neuron-check/", "neuron-check/neuron-check.json", "neuronasv doctor --neuron-check"),
    Entry("/out/demo/", "out/demo/findings.json", "neuronasv demo"),
)


def _ignored(git: Git, probe: str) -> bool:
    # No global excludes file: a teammate's clone (and CI) does not have it.
    res = git.run("-c", "core.excludesFile=/dev/null", "check-ignore", "--quiet", "--no-index",
                  probe, check=False)  # fmt: skip
    return res.returncode == 0


def missing(git: Git) -> tuple[list[Entry], list[str]]:
    """(entries to add, notes): what git does not ignore yet, and folders left alone."""
    todo, notes = [], []
    for entry in ENTRIES:
        if _ignored(git, entry.probe):
            continue
        folder = entry.line.strip("/")
        tracked = git.run("ls-files", "--", folder, check=False).text.strip()
        if tracked:
            notes.append(
                f"{folder}/ holds tracked files: not ignored ({entry.writer} writes there"
                " by default; give it --out elsewhere)"
            )
            continue
        todo.append(entry)
    return todo, notes


def add_lines(root: str, lines: list[str]) -> str:
    """Append ``lines`` to ``root/.gitignore`` (see the module doc); what was done, in words."""
    path = os.path.join(root, ".gitignore")
    if not lines:
        return ""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
        return (
            f"kept .gitignore (a symbolic link or not a file: not followed); add these lines"
            f" to the file it stands for: {' '.join(lines)}"
        )
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    prefix = ""
    if os.path.exists(path):
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size:
                fh.seek(size - 1)
                prefix = "" if fh.read(1) in (b"\n", b"\r") else "\n"
    else:
        flags |= os.O_CREAT | os.O_EXCL
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(prefix + "".join(f"{line}\n" for line in lines))
    return f"added {', '.join(lines)} to .gitignore"
