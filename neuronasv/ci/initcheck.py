"""``neuronasv init --check``: what init would write, against what is there, line by meaning.

A file that differs is not simply "stale or edited": each difference is judged.

- **stale pin** (fails): a caller job calls a reusable workflow of this neuronasv's
  repository at another commit, or installs ``package`` from another commit of it;
- **not supported** (fails): what would break the flow or widen its privileges: a missing
  caller job, another repository than the one this neuronasv comes from, a ``package``
  that is not the pinned neuronasv, a permission above or below what init grants, a
  ``push`` trigger without the default branch, ``branches`` of ``asv.conf.json`` without
  it, an ``environment_type`` other than ``existing``, or anything else GitHub refuses at
  start-up (:func:`start_up_rules`: an input the pinned workflow does not have or of the
  wrong type, ...);
- **customised** (kept, exit 0): everything else — the reusable workflows' other inputs
  (``backend``, ``metrics``, ``runner-labels``, ``bench``, ``machine``, ``python``,
  ``shards``, ``site-branch``, ...), ``if:`` conditions, more jobs or triggers, other
  ``asv.conf.json`` keys, and any edit of the suite or workloads modules (they are yours).

A calling job's permissions are neither wider nor narrower than init's: init grants exactly
what the called workflow's jobs ask (``tests/ci/test_workflow_rules.py``), and GitHub
refuses a caller that grants less before any job runs, whatever their ``if:``
(:mod:`neuronasv.ci.wfrules` holds the permission model).

The list of supported edits is in docs/getting-started.md ("What `init --check` accepts").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from neuronasv.ci import wfrules
from neuronasv.ci.scaffold import WORKFLOW_FILES, Source

__all__ = ["Finding", "check_file", "repin", "start_up_rules"]

_CALL = re.compile(
    r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/\.github/workflows/(neuronasv-[a-z]+\.yml)@(.+)$"
)
_PACKAGE = re.compile(
    r"^git\+https://github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?@(.+)$"
)


@dataclass(frozen=True)
class Finding:
    """One judged difference: ``kind`` is ``missing``, ``stale pin``, ``not supported`` or
    ``customised``; only ``customised`` passes."""

    path: str
    kind: str
    text: str

    @property
    def fails(self) -> bool:
        return self.kind != "customised"

    def line(self) -> str:
        if self.kind == "missing":
            return f"missing: {self.path}"
        return f"{self.kind}: {self.path}" + (f": {self.text}" if self.text else "")


def check_file(
    rel: str, expected: str, actual: str, source: Source, branch: str
) -> list[Finding]:
    """The judged differences of one file init writes (none when it is as init writes it)."""
    if actual == expected:
        return []
    if _unpinned(actual) == _unpinned(expected):
        return []  # only the commit in a docs link differs: the callers' pins are judged
    if rel in WORKFLOW_FILES:
        return list(_workflow(rel, expected, actual, source))
    if rel == "asv.conf.json":
        return list(_asv_conf(rel, expected, actual, branch))
    return [Finding(rel, "customised", "edited (the suite and workloads modules are yours)")]


def _unpinned(text: str) -> str:
    """``text`` with the commit of every ``github.com/OWNER/REPO/blob/<sha>`` link blanked."""
    return re.sub(r"(github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/blob/)[0-9a-f]{40}", r"\1-", text)


# --------------------------------------------------------------------------- workflows


def _yaml(text: str) -> Any:
    import yaml

    data = yaml.safe_load(text)
    if isinstance(data, dict) and True in data:  # YAML 1.1 reads the key `on` as True
        data["on"] = data.pop(True)
    return data


#: What an absent ``permissions:`` may grant: the repository's default, maybe write-all.
_ANY = dict.fromkeys(wfrules.SCOPES, wfrules.LEVEL["write"])


def _wider(actual: Any, expected: Any) -> list[str]:
    return wfrules.missing(wfrules.grants(actual, _ANY), wfrules.grants(expected, {}))


def _calls(jobs: Any) -> Iterator[tuple[str, dict[str, Any], re.Match[str]]]:
    for name, job in (jobs or {}).items() if isinstance(jobs, dict) else ():
        m = _CALL.match(str(job.get("uses", ""))) if isinstance(job, dict) else None
        if m:
            yield str(name), job, m


def _leaves(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    return {path: value}


def _workflow(rel: str, expected: str, actual: str, source: Source) -> Iterator[Finding]:
    try:
        want, have = _yaml(expected), _yaml(actual)
    except Exception as exc:  # yaml.YAMLError and its kin: the file is not YAML any more
        yield Finding(rel, "not supported", f"not readable as YAML ({type(exc).__name__})")
        return
    if not isinstance(have, dict):
        yield Finding(rel, "not supported", "not a workflow (no mapping at the top)")
        return
    judged: set[str] = set()
    wide = _wider(have.get("permissions"), want.get("permissions"))
    judged.add("permissions")
    if wide:
        yield Finding(rel, "not supported", f"permissions grant {', '.join(wide)} (init: none)")
    yield from _push_branches(rel, want, have, judged)
    want_calls = {m.group(2): (name, job) for name, job, m in _calls(want.get("jobs"))}
    seen: set[str] = set()
    for name, job, m in _calls(have.get("jobs")):
        seen.add(m.group(2))
        yield from _call_job(rel, name, job, m, want_calls.get(m.group(2)), source, judged)
    for callee, (name, _job) in want_calls.items():
        if callee not in seen:
            judged.add(f"jobs.{name}")
            yield Finding(rel, "not supported", f"no job calls {callee} (init writes jobs.{name})")
    yield from _customised(rel, want, have, judged)


def _call_job(
    rel: str,
    name: str,
    job: dict[str, Any],
    m: re.Match[str],
    exp: tuple[str, dict[str, Any]] | None,
    source: Source,
    judged: set[str],
) -> Iterator[Finding]:
    """The findings on one job of the caller workflow that calls a reusable workflow: whose
    repository and pin it calls, the package it installs, secrets and permissions it passes,
    and whether it is the job ``init`` writes (``exp``: that job's name and body) renamed."""
    where = f"jobs.{name}"
    judged.update({f"{where}.uses", f"{where}.with.package", f"{where}.permissions"})
    yield from _call_pin(rel, where, job, m, source)
    if "secrets" in job:
        yield Finding(rel, "not supported", f"{where} passes secrets; the reusable"
                      " workflows take none (SECURITY.md)")  # fmt: skip
    judged.add(f"{where}.secrets")
    yield from _job_permissions(rel, where, job, exp, m.group(2))
    if exp and exp[0] != name:
        judged.update(f"jobs.{exp[0]}.{k}" for k in _leaves(exp[1], ""))
        judged.update({f"jobs.{exp[0]}", f"jobs.{name}"})
        yield Finding(rel, "customised", f"jobs.{exp[0]} renamed {name}")


def _call_pin(
    rel: str, where: str, job: dict[str, Any], m: re.Match[str], source: Source
) -> Iterator[Finding]:
    """The findings on what a calling job pins: the repository and commit of its ``uses:``
    and the neuronasv its ``package`` installs (one stale-pin finding when both lag alike)."""
    repo, callee, ref = m.groups()
    if repo != source.repository:
        yield Finding(rel, "not supported", f"{where} calls {repo}; this neuronasv is"
                      f" {source.repository}'s (init --from {repo} if deliberate)")  # fmt: skip
    both = ref != source.commit and _package_ref(job, source) == ref
    if repo == source.repository and ref != source.commit:
        yield Finding(rel, "stale pin", f"{where} pins {callee}{' and package' if both else ''}"
                      f" at {ref[:12]}; this neuronasv is {source.commit[:12]}")  # fmt: skip
    if not both:
        yield from _package(rel, where, job, source)


def _job_permissions(
    rel: str, where: str, job: dict[str, Any], exp: tuple[str, dict[str, Any]] | None,
    callee: str,
) -> Iterator[Finding]:  # fmt: skip
    """A calling job's permissions against those of the job ``init`` writes for its callee
    (exactly what the callee's jobs ask: less is refused by GitHub, more is a privilege)."""
    want = exp[1].get("permissions") if exp else {}
    wide = _wider(job.get("permissions"), want)
    short = wfrules.missing(wfrules.grants(want, {}), wfrules.grants(job.get("permissions")))
    if wide:
        yield Finding(rel, "not supported", f"{where} grants {', '.join(wide)}, more than"
                      " init writes (SECURITY.md)")  # fmt: skip
    if short:
        yield Finding(rel, "not supported", f"{where} does not grant {', '.join(short)}, which"
                      f" jobs of {callee} ask: GitHub refuses the whole file before any job"
                      f" runs (grant it in {where}.permissions, as init writes)")  # fmt: skip
    elif not wide and exp and job.get("permissions") != want:
        yield Finding(rel, "customised", f"{where}.permissions = {job.get('permissions')!r}")


def start_up_rules(
    callers: Mapping[str, str], source: Source, reusable: Mapping[str, str]
) -> list[Finding]:
    """GitHub's start-up rules (:mod:`neuronasv.ci.wfrules`) over the caller files as they
    are, against ``reusable`` (name -> text: this neuronasv's reusable workflows, the ones
    the callers pin): an input that does not exist or has the wrong type, a required one
    left out, a secret the called workflow does not declare, an output nobody declares...
    Each is "not supported": GitHub would refuse the file. Permissions are judged by
    :func:`check_file` already (against init's grant); unreadable files are said there."""
    parsed = {}
    for rel, text in callers.items():
        try:
            parsed[rel] = wfrules.parse(text)
        except Exception:  # yaml.YAMLError and its kin: check_file says it
            continue
    called = {source.repository: {n: wfrules.parse(t) for n, t in reusable.items()}}
    return [Finding(v.file, "not supported", f"{v.where}: {v.text} (GitHub refuses the file"
                    " at start-up)") for v in wfrules.check(parsed, called)
            if v.rule != "permissions"]  # fmt: skip


def _push_branches(rel: str, want: Any, have: Any, judged: set[str]) -> Iterator[Finding]:
    push = (want.get("on") or {}).get("push") if isinstance(want.get("on"), dict) else None
    if not push:
        return
    judged.add("on.push.branches")
    on = have.get("on")
    got = (on.get("push") or {}) if isinstance(on, dict) else {}
    branches = got.get("branches") if isinstance(got, dict) else None
    wanted = push["branches"][0]
    if not isinstance(branches, list) or wanted not in branches:
        yield Finding(rel, "not supported", f"on.push.branches is {branches!r}, without"
                      f" the default branch {wanted!r}: no per-commit run there")  # fmt: skip
    elif branches != push["branches"]:
        yield Finding(rel, "customised", f"on.push.branches = {branches!r}")


def _package_of(job: Mapping[str, Any]) -> Any:
    with_ = job.get("with")
    return with_.get("package") if isinstance(with_, dict) else None


def _package_ref(job: Mapping[str, Any], source: Source) -> str | None:
    """The commit of this neuronasv's repository the job's ``package`` installs, if it does."""
    m = _PACKAGE.match(str(_package_of(job) or ""))
    return m.group(2) if m and m.group(1) == source.repository else None


def _package(rel: str, where: str, job: Mapping[str, Any], source: Source) -> Iterator[Finding]:
    package = _package_of(job)
    if package == source.package:
        return
    m = _PACKAGE.match(str(package or ""))
    if m and m.group(1) == source.repository:
        yield Finding(rel, "stale pin", f"{where}.with.package installs {source.repository}"
                      f"@{m.group(2)[:12]}; this neuronasv is {source.commit[:12]}")  # fmt: skip
    elif package is None:
        yield Finding(rel, "not supported", f"{where} passes no package (the reusable"
                      " workflows install exactly the neuronasv they were called at)")  # fmt: skip
    else:
        yield Finding(rel, "not supported", f"{where}.with.package is {package!r}, not the"
                      f" neuronasv its workflow is pinned to ({source.package})")  # fmt: skip


def _customised(rel: str, want: Any, have: Any, judged: set[str]) -> Iterator[Finding]:
    a, b = _leaves(want, ""), _leaves(have, "")

    def covered(path: str) -> bool:
        return any(path == j or path.startswith(j + ".") for j in judged)

    for path in sorted(set(a) | set(b)):
        if covered(path) or a.get(path) == b.get(path):
            continue
        if path not in b:
            yield Finding(rel, "customised", f"{path} removed")
        else:
            yield Finding(rel, "customised", f"{path} = {b[path]!r}")


# --------------------------------------------------------------------------- asv.conf.json


def _asv_conf(rel: str, expected: str, actual: str, branch: str) -> Iterator[Finding]:
    import json5

    want = json5.loads(expected)
    try:
        have = json5.loads(actual)
    except ValueError as exc:
        yield Finding(rel, "not supported", f"not readable as JSON5 ({exc})")
        return
    if not isinstance(have, dict):
        yield Finding(rel, "not supported", "not an asv configuration (no object at the top)")
        return
    branches = have.get("branches")
    if not isinstance(branches, list) or branch not in branches:
        yield Finding(rel, "not supported", f"branches is {branches!r}, without the default"
                      f" branch {branch!r} (asv publish and history follow it)")  # fmt: skip
    elif branches != want["branches"]:
        yield Finding(rel, "customised", f"branches = {branches!r}")
    if have.get("environment_type") != "existing":
        kind = have.get("environment_type")
        yield Finding(rel, "not supported", f"environment_type is {kind!r}: neuronasv run"
                      " needs 'existing'")  # fmt: skip
    for key in sorted(set(want) | set(have)):
        if key in ("branches", "environment_type") or want.get(key) == have.get(key):
            continue
        shown = "removed" if key not in have else f"= {have[key]!r}"
        yield Finding(rel, "customised", f"{key} {shown}")


def repin(text: str, old: tuple[str, str], new: Source, version: str) -> str:
    """``text`` (a caller workflow) with the pins of ``old`` (repository, commit) moved to
    ``new``: the ``uses:`` refs, the ``package`` requirement, docs links and the version
    comments; every other line as it is."""
    repo, sha = (re.escape(v) for v in old)
    text = re.sub(rf"{repo}(/\.github/workflows/neuronasv-[a-z]+\.yml@){sha}\b",
                  lambda m: f"{new.repository}{m.group(1)}{new.commit}", text)  # fmt: skip
    text = re.sub(rf"(git\+https://github\.com/){repo}@{sha}\b",
                  lambda m: f"{m.group(1)}{new.repository}@{new.commit}", text)  # fmt: skip
    text = re.sub(rf"github\.com/{repo}/blob/{sha}\b",
                  f"github.com/{new.repository}/blob/{new.commit}", text)  # fmt: skip
    return re.sub(r"(# neuronasv |\(neuronasv )\d+\.\d+[0-9A-Za-z.+-]*",
                  lambda m: m.group(1) + version, text)  # fmt: skip
