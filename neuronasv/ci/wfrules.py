"""GitHub's rules for workflows that call reusable workflows, checked on the files.

GitHub reads a caller and every workflow it calls when a run starts, and refuses the whole
run when one of these rules is broken ("startup failure": no job runs, not even the jobs the
rule is not about). Neither act nor actionlint enforces the first one, and actionlint checks
the others only for reusable workflows of the same repository. The rules, as GitHub
documents them (docs.github.com: "Reuse workflows"; "Workflow syntax for GitHub Actions":
``on.workflow_call``, ``jobs.<job_id>.uses/with/secrets/permissions/needs/outputs``;
"Controlling permissions for GITHUB_TOKEN"):

- **permissions** — a called workflow can only narrow the caller's token: each of its jobs
  (its own ``permissions``, else the called workflow's top-level ones) may ask at most what
  the calling job grants (its ``permissions``, else its workflow's top-level ones, else the
  repository's default token, taken here as the restricted one: ``contents`` and
  ``packages`` read). It is checked before any ``if:``: a job that would never run counts.
- **inputs** — each ``with:`` key is an input of the called ``on.workflow_call``; each
  ``required`` input is given; a literal value has the input's type (a ``boolean`` or
  ``number`` input takes no string; an expression is not judged).
- **secrets** — each passed secret is declared by the called workflow (``secrets:
  inherit`` passes them all); each required secret is passed.
- **outputs** — ``needs.<job>.outputs.<name>`` names a job listed in ``needs`` and an output
  it declares (a calling job: an output of the called ``on.workflow_call``); each
  ``on.workflow_call.outputs.<name>.value`` reads an output its job declares; a job output
  reads ``steps.<id>`` of a step of that job.
- **needs** — each name is a job of the same workflow.
- **names** — a called workflow exists and has ``on: workflow_call``; ``inputs.<name>`` in a
  workflow is one of its ``workflow_call`` or ``workflow_dispatch`` inputs;
  ``on.workflow_run.workflows`` names the ``name:`` of a workflow of the set.

Pure: parsed workflows in, :class:`Violation` out. ``tests/ci/test_workflow_rules.py`` runs
it on every workflow of this repository and every caller ``neuronasv init`` writes, as
written and with the documented customisations; ``neuronasv init --check`` judges
permissions with the same model (:func:`grants`, :func:`missing`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LEVEL",
    "RESTRICTED_DEFAULT",
    "SCOPES",
    "Violation",
    "check",
    "grants",
    "missing",
    "parse",
]

LEVEL = {"none": 0, "read": 1, "write": 2}
_NAMES = {v: k for k, v in LEVEL.items()}
#: The token's permission scopes (GitHub's list; ``metadata`` is always read).
SCOPES = ("actions", "attestations", "checks", "contents", "deployments", "discussions",
          "id-token", "issues", "models", "packages", "pages", "pull-requests",
          "repository-projects", "security-events", "statuses")  # fmt: skip
#: The repository default GitHub calls restricted: what a job that sets no permissions gets.
RESTRICTED_DEFAULT = {"contents": 1, "packages": 1}

_LOCAL = re.compile(r"^\./\.github/workflows/([^/@]+\.ya?ml)\Z")
_REMOTE = re.compile(r"^([\w.-]+/[\w.-]+)/\.github/workflows/([^/@]+\.ya?ml)@(.+)\Z")
_NEEDS_OUT = re.compile(r"\bneeds\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*)")
_NEEDS_ANY = re.compile(r"\bneeds\.([A-Za-z_][\w-]*)\.")
_JOBS_OUT = re.compile(r"\bjobs\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*)")
_STEPS = re.compile(r"\bsteps\.([A-Za-z_][\w-]*)\.")
_INPUTS = re.compile(r"(?<![\w.])inputs\.([A-Za-z_][\w-]*)")

Workflow = Mapping[str, Any]


@dataclass(frozen=True)
class Violation:
    """One broken rule: the file, where in it, which rule, and what is wrong."""

    file: str
    where: str
    rule: str
    text: str

    def line(self) -> str:
        return f"{self.file}: {self.where}: {self.text}"


def parse(text: str) -> dict[str, Any]:
    """A workflow file as a mapping (the key ``on``, which YAML 1.1 reads as True, fixed)."""
    import yaml

    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        return {}
    if True in data:
        data["on"] = data.pop(True)
    return data


def grants(perms: Any, inherited: Mapping[str, int] | None = None) -> dict[str, int]:
    """``scope -> level`` of a ``permissions:`` value; ``None`` (absent) is ``inherited``
    (else the restricted default). Scopes a mapping leaves out are ``none``."""
    if perms is None:
        return dict(inherited if inherited is not None else RESTRICTED_DEFAULT)
    if isinstance(perms, str):
        level = {"write-all": 2, "read-all": 1}.get(perms, 0)
        return dict.fromkeys(SCOPES, level)
    if not isinstance(perms, Mapping):
        return {}
    return {str(k): LEVEL.get(str(v), 2) for k, v in perms.items() if LEVEL.get(str(v), 2)}


def missing(asked: Mapping[str, int], granted: Mapping[str, int]) -> list[str]:
    """``scope: level`` of what ``asked`` holds above ``granted``, sorted."""
    return [f"{scope}: {_NAMES[level]}" for scope, level in sorted(asked.items())
            if level > granted.get(scope, 0)]  # fmt: skip


def _on(wf: Workflow) -> dict[str, Any]:
    on = wf.get("on")
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return dict(on) if isinstance(on, Mapping) else {}


def _call(wf: Workflow) -> dict[str, Any] | None:
    on = _on(wf)
    if "workflow_call" not in on:
        return None
    return dict(on["workflow_call"] or {})


def _jobs(wf: Workflow) -> dict[str, dict[str, Any]]:
    jobs = wf.get("jobs")
    if not isinstance(jobs, Mapping):
        return {}
    return {str(k): dict(v) for k, v in jobs.items() if isinstance(v, Mapping)}


def _needs(job: Mapping[str, Any]) -> list[str]:
    needs = job.get("needs")
    if isinstance(needs, str):
        return [needs]
    return [str(n) for n in needs] if isinstance(needs, list) else []


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _declared(section: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(section, Mapping):
        return {}
    return {str(k): dict(v) if isinstance(v, Mapping) else {} for k, v in section.items()}


class _Checker:
    """The rules over one set of workflows (see the module doc)."""

    def __init__(self, files: Mapping[str, Workflow],
                 called: Mapping[str, Mapping[str, Workflow]]) -> None:  # fmt: skip
        self.files = files
        self.called = called
        self.names = {str(wf.get("name")) for wf in files.values() if wf.get("name")}
        self.out: list[Violation] = []

    def add(self, file: str, where: str, rule: str, text: str) -> None:
        self.out.append(Violation(file, where, rule, text))

    def resolve(self, uses: str) -> tuple[str, Workflow | None] | None:
        """(name, the called workflow or None when absent); None for a workflow of a
        repository this check was not given."""
        m = _LOCAL.match(uses)
        if m:
            name = m.group(1)
            found = [wf for path, wf in self.files.items() if path.rsplit("/", 1)[-1] == name]
            return name, (found[0] if found else None)
        m = _REMOTE.match(uses)
        if m and m.group(1) in self.called:
            return m.group(2), self.called[m.group(1)].get(m.group(2))
        return None

    def run(self) -> list[Violation]:
        for path, wf in self.files.items():
            jobs = _jobs(wf)
            self.workflow_run(path, wf)
            self.inputs_used(path, wf)
            self.call_outputs(path, wf, jobs)
            top = wf.get("permissions")
            for job_id, job in jobs.items():
                self.needs(path, job_id, job, jobs)
                self.steps_in_outputs(path, job_id, job)
                uses = job.get("uses")
                if isinstance(uses, str):
                    self.uses(path, job_id, job, uses, grants(job.get("permissions"),
                                                              grants(top)))  # fmt: skip
        return self.out

    # ------------------------------------------------------------------ one call

    def uses(self, path: str, job_id: str, job: Mapping[str, Any], uses: str,
             granted: Mapping[str, int]) -> None:  # fmt: skip
        where = f"jobs.{job_id}"
        found = self.resolve(uses)
        if found is None:
            return
        name, callee = found
        call = _call(callee) if callee is not None else None
        if callee is None or call is None:
            what = "no such workflow" if callee is None else "not reusable (no on.workflow_call)"
            self.add(path, where, "names", f"calls {name}: {what}")
            return
        self.permissions(path, where, name, callee, granted)
        self.with_inputs(path, where, name, job.get("with"), _declared(call.get("inputs")))
        self.secrets(path, where, name, job.get("secrets"), _declared(call.get("secrets")))

    def permissions(self, path: str, where: str, name: str, callee: Workflow,
                    granted: Mapping[str, int]) -> None:  # fmt: skip
        top = callee.get("permissions")
        for job_id, job in _jobs(callee).items():
            if "permissions" not in job and top is None:
                continue  # inherits the caller's token as it is
            asked = grants(job.get("permissions", top))
            over = missing(asked, granted)
            if over:
                self.add(path, where, "permissions",
                         f"{name}'s job {job_id} asks {', '.join(over)}, which {where} does not"
                         " grant: GitHub refuses the whole file before any job runs (grant it"
                         f" in {where}.permissions)")  # fmt: skip

    def with_inputs(self, path: str, where: str, name: str, given: Any,
                    declared: Mapping[str, Mapping[str, Any]]) -> None:  # fmt: skip
        given = dict(given) if isinstance(given, Mapping) else {}
        for key, value in given.items():
            spec = declared.get(str(key))
            if spec is None:
                known = ", ".join(sorted(declared))
                self.add(path, f"{where}.with.{key}", "inputs",
                         f"{name} has no input {key!r} (it has: {known})")  # fmt: skip
                continue
            wrong = _type_error(spec.get("type", "string"), value)
            if wrong:
                self.add(path, f"{where}.with.{key}", "inputs", f"{name}'s input {key} {wrong}")
        for key, spec in declared.items():
            if spec.get("required") is True and key not in given:
                self.add(path, where, "inputs", f"{name}'s required input {key!r} is not given")

    def secrets(self, path: str, where: str, name: str, given: Any,
                declared: Mapping[str, Mapping[str, Any]]) -> None:  # fmt: skip
        if given == "inherit":
            return
        passed = dict(given) if isinstance(given, Mapping) else {}
        for key in passed:
            if str(key) not in declared:
                self.add(path, f"{where}.secrets.{key}", "secrets",
                         f"{name} declares no secret {key!r}")  # fmt: skip
        for key, spec in declared.items():
            if spec.get("required") is True and key not in passed:
                self.add(path, where, "secrets", f"{name}'s required secret {key!r} is not passed")

    # ------------------------------------------------------------------ one workflow

    def needs(self, path: str, job_id: str, job: Mapping[str, Any],
              jobs: Mapping[str, Mapping[str, Any]]) -> None:  # fmt: skip
        listed = _needs(job)
        for need in listed:
            if need not in jobs:
                self.add(path, f"jobs.{job_id}.needs", "needs", f"no job {need!r} to need")
        for text in _strings({k: v for k, v in job.items() if k != "needs"}):
            for other in _NEEDS_ANY.findall(text):
                if other not in listed:
                    self.add(path, f"jobs.{job_id}", "needs",
                             f"reads needs.{other} without needing {other}")  # fmt: skip
            for other, output in _NEEDS_OUT.findall(text):
                if other in listed and other in jobs:
                    outs = self.outputs_of(jobs[other])
                    if outs is not None and output not in outs:
                        known = ", ".join(sorted(outs)) or "none"
                        self.add(path, f"jobs.{job_id}", "outputs",
                                 f"needs.{other}.outputs.{output}: {other} has no output"
                                 f" {output!r} (it has: {known})")  # fmt: skip

    def outputs_of(self, job: Mapping[str, Any]) -> set[str] | None:
        """The outputs a job declares (a calling job: its workflow's); None: unknown."""
        uses = job.get("uses")
        if isinstance(uses, str):
            found = self.resolve(uses)
            if found is None or found[1] is None:
                return None
            call = _call(found[1])
            return set(_declared((call or {}).get("outputs")))
        outs = job.get("outputs")
        return {str(k) for k in outs} if isinstance(outs, Mapping) else set()

    def steps_in_outputs(self, path: str, job_id: str, job: Mapping[str, Any]) -> None:
        ids = {str(s.get("id")) for s in job.get("steps") or [] if isinstance(s, Mapping)}
        for text in _strings(job.get("outputs") or {}):
            for step in _STEPS.findall(text):
                if step not in ids:
                    self.add(path, f"jobs.{job_id}.outputs", "outputs",
                             f"reads steps.{step}, and no step of {job_id} has that"
                             " id")  # fmt: skip

    def call_outputs(self, path: str, wf: Workflow,
                     jobs: Mapping[str, Mapping[str, Any]]) -> None:  # fmt: skip
        call = _call(wf)
        for name, spec in _declared((call or {}).get("outputs")).items():
            for job_id, output in _JOBS_OUT.findall(str(spec.get("value", ""))):
                outs = self.outputs_of(jobs[job_id]) if job_id in jobs else set()
                if outs is not None and output not in outs:
                    self.add(path, f"on.workflow_call.outputs.{name}", "outputs",
                             f"reads jobs.{job_id}.outputs.{output}, which is not"
                             " declared")  # fmt: skip

    def inputs_used(self, path: str, wf: Workflow) -> None:
        on = _on(wf)
        declared: set[str] = set()
        for event in ("workflow_call", "workflow_dispatch"):
            declared |= set(_declared((on.get(event) or {}).get("inputs")))
        for text in _strings(wf.get("jobs") or {}):
            for used in _INPUTS.findall(text):
                if used not in declared:
                    self.add(path, "jobs", "names", f"inputs.{used} is not an input of this"
                             " workflow")  # fmt: skip

    def workflow_run(self, path: str, wf: Workflow) -> None:
        spec = _on(wf).get("workflow_run")
        watched = (spec or {}).get("workflows") if isinstance(spec, Mapping) else None
        for name in watched or []:
            if str(name) not in self.names:
                known = ", ".join(sorted(self.names))
                self.add(path, "on.workflow_run.workflows", "names",
                         f"no workflow is named {name!r} (names: {known})")  # fmt: skip


def _type_error(kind: str, value: Any) -> str:
    """Why ``value`` (a literal of ``with:``) does not fit an input of ``kind``, or ''."""
    if isinstance(value, str) and "${{" in value:
        return ""  # an expression: its type is known when it runs
    if isinstance(value, (Mapping, list)) or value is None:
        return f"is typed {kind}; a {type(value).__name__} is given"
    if kind == "boolean" and not isinstance(value, bool):
        return f"is typed boolean; {value!r} is given"
    if kind == "number" and (isinstance(value, (bool, str))):
        return f"is typed number; {value!r} is given"
    return ""


def check(
    files: Mapping[str, Workflow], called: Mapping[str, Mapping[str, Workflow]] | None = None
) -> list[Violation]:
    """Every rule of the module doc broken in ``files`` (path -> parsed workflow: the set a
    repository holds). ``called`` gives the reusable workflows of other repositories
    (``OWNER/REPO`` -> file name -> parsed) that ``uses:`` lines may name at any ref; a
    call into a repository not given is not checked."""
    return _Checker(files, called or {}).run()
