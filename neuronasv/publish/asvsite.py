"""asv's own site, next to ours (``<out>/asv/``), so asv users keep their view.

Optional because ``asv publish`` is not incremental and slow (it re-reads every results
file and re-runs its step detection on every graph: minutes at thousands of commits, see
docs/publishing.md). It runs in a subprocess on a copy of the project's ``asv.conf.json``
with ``results_dir``, ``html_dir`` and ``repo`` made absolute, so the user's config file is
never edited.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from neuronasv.errors import UsageError
from neuronasv.proc import ProcResult, run_process
from neuronasv.store.asvconf import read_asv_config

__all__ = ["run_asv_publish"]


def run_asv_publish(
    *,
    config: str | os.PathLike[str],
    results_dir: str | os.PathLike[str],
    html_dir: str | os.PathLike[str],
    repo: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
) -> ProcResult:
    """Run ``asv publish`` into ``html_dir``.

    Args:
        config: the project's ``asv.conf.json``.
        results_dir: results folder to publish (overrides the config's).
        html_dir: where asv writes its site (asv deletes it first).
        repo: repository for commit order (overrides the config's ``repo``).
        timeout: seconds before giving up.

    Raises:
        UsageError: the config is missing or asv publish failed (its output is included).
    """
    cfg_path = os.fspath(config)
    conf = read_asv_config(cfg_path)  # UsageError naming the file when unreadable
    base = os.path.dirname(os.path.abspath(cfg_path))
    conf["results_dir"] = os.path.abspath(os.fspath(results_dir))
    conf["html_dir"] = os.path.abspath(os.fspath(html_dir))
    conf["repo"] = (
        os.path.abspath(os.fspath(repo)) if repo else os.path.join(base, str(conf.get("repo", ".")))
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp_cfg = os.path.join(tmp, "asv.conf.json")
        with open(tmp_cfg, "w", encoding="utf-8") as fh:
            json.dump(conf, fh)
        proc = run_process(
            [sys.executable, "-m", "asv", "publish", "--no-pull", "--config", tmp_cfg],
            timeout=timeout,
            cwd=base,
            text=True,
        )
    if proc.returncode != 0:
        tail = proc.output[-2000:]
        raise UsageError(f"asv publish failed (exit {proc.returncode}):\n{tail}")
    return proc
