"""The one reader of ``asv.conf.json``: asv's own parser rules, one results-folder default.

asv reads its config with ``asv.util.load_json(path, js_comments=True)``, which is
``json5.loads`` of the text (``//`` and ``/* */`` comments anywhere, trailing commas). This
module calls ``json5`` directly — the same parser, so every config asv accepts is read the
same way here — without importing asv (0.3 s of start-up for ``python -m
neuronasv.publish``). Before it, ``run`` used asv's parser while compare/regressions/publish
and the store stripped only whole-line ``//`` comments: a config with a trailing comment
made ``run`` write to its ``results_dir`` while the readers silently fell back to another
folder.

One default too: without a config (or without ``results_dir`` in it) every command uses
:data:`DEFAULT_RESULTS_DIR` (``.asv/results``), where ``neuronasv run`` writes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import json5

from neuronasv.errors import UsageError

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_HTML_DIR",
    "DEFAULT_RESULTS_DIR",
    "DEFAULT_TITLE",
    "DEFAULT_TRACES_DIR",
    "TRACES_SUBDIR",
    "checkout_root",
    "comment_title",
    "config_dir",
    "read_asv_config",
    "repo_config",
    "results_dir_for",
    "traces_dir_for",
]

CONFIG_NAME = "asv.conf.json"
DEFAULT_RESULTS_DIR = os.path.join(".asv", "results")
DEFAULT_HTML_DIR = os.path.join(".asv", "html")
#: The trace store beside the default results folder (outside it: asv walks the results
#: folder and tries to load every ``*.json``, and a Neuron trace folder holds some).
DEFAULT_TRACES_DIR = os.path.join(".asv", "traces")
#: The trace store inside an explicit ``--results-dir`` (a dot folder: the results branch
#: and every results reader skip it).
TRACES_SUBDIR = ".traces"


def read_asv_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse an asv config file exactly as asv does (JSON5: comments, trailing commas).

    Raises:
        UsageError: unreadable, not JSON5, or not an object (names the file; exit 2).
    """
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: cannot read the asv config: {exc}") from exc
    try:
        data = json5.loads(text)
    except ValueError as exc:  # json5 raises ValueError subclasses with line/column
        raise UsageError(f"{p}: the asv config is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{p}: the asv config must be a JSON object")
    return data


def repo_config(root: str | os.PathLike[str]) -> dict[str, Any]:
    """``<root>/asv.conf.json`` parsed; ``{}`` when there is none (a bad one is an error)."""
    path = os.path.join(os.fspath(root), CONFIG_NAME)
    return read_asv_config(path) if os.path.isfile(path) else {}


def project_name(root: str | os.PathLike[str]) -> str | None:
    """The ``project`` named in ``<root>/asv.conf.json`` (``neuronasv init`` writes it), or
    None when there is no config or it names none. It titles the site and the PR comment."""
    project = repo_config(root).get("project")
    return project if isinstance(project, str) and project.strip() else None


#: The PR comment's title when nothing names the project.
DEFAULT_TITLE = "neuronasv"


def checkout_root(start: str | os.PathLike[str] = ".") -> str:
    """The top level of the git work tree holding ``start`` (found from any subdirectory,
    as git finds it), else ``start`` made absolute (a plain folder, a bare repository)."""
    from neuronasv.errors import StoreError
    from neuronasv.store.git import Git

    path = os.path.abspath(start)
    try:
        top = Git(path).toplevel()
    except StoreError:
        return path
    return os.path.abspath(top) if top else path


def comment_title(start: str | os.PathLike[str] = ".", given: str | None = None) -> str:
    """The word before the PR comment's headline: ``given`` (``--title``, a workflow
    input), else the project named in the ``asv.conf.json`` of the checkout holding
    ``start``, else :data:`DEFAULT_TITLE`. The one source for ``neuronasv comment`` and the
    privileged comment step; the renderer escapes it."""
    return given or project_name(checkout_root(start)) or DEFAULT_TITLE


def config_dir(
    root: str | os.PathLike[str],
    key: str,
    default: str,
    *,
    conf: Mapping[str, Any] | None = None,
    override: str | os.PathLike[str] | None = None,
) -> str:
    """A folder setting of the config (``results_dir``, ``html_dir``) as a path.

    ``override`` (a command-line option) wins; then the config's non-empty string value,
    relative to ``root``; then ``default`` relative to ``root``.
    """
    if override:
        return os.fspath(override)
    r = os.fspath(root)
    data = repo_config(r) if conf is None else conf
    value = data.get(key)
    chosen = value if isinstance(value, str) and value else default
    return chosen if os.path.isabs(chosen) else os.path.join(r, chosen)


def results_dir_for(
    root: str | os.PathLike[str] | None = ".",
    override: str | os.PathLike[str] | None = None,
) -> str:
    """The results folder every command uses: ``override``, else the config's, else default."""
    return config_dir(root or ".", "results_dir", DEFAULT_RESULTS_DIR, override=override)


def traces_dir_for(
    root: str | os.PathLike[str], results_override: str | os.PathLike[str] | None = None
) -> str:
    """The default trace store: inside ``--results-dir`` when one is given (a run writes only
    into its output folder), else ``.asv/traces`` of the checkout ``root``."""
    if results_override:
        return os.path.join(os.fspath(results_override), TRACES_SUBDIR)
    return os.path.join(os.fspath(root), DEFAULT_TRACES_DIR)
