"""The Report stage's loopback GitHub stand-in, plus what the CI flows also need.

Adds to :class:`tests.github.fakegithub.FakeGitHub`:

- ``GET /repos/{o}/{r}/pulls/{n}``: ``{"number", "state", "head": {"sha", "ref",
  "repo": {"full_name"}}}`` for PRs registered with :meth:`FakeGitHubCI.add_pull`, and
  ``GET /repos/{o}/{r}/pulls?state=open&head=OWNER:REF`` listing them (GitHub filters by
  the head's owner and branch): the comment job binds a run to its PR with these;
- ``GET /repos/{o}/{r}/commits/{sha}/pulls``: the PRs planted for a commit with
  :meth:`FakeGitHubCI.add_commit_pull` (``neuronasv bisect`` names the culprit's PR);
- ``GET /repos/{o}/{r}/actions/runs/{id}/artifacts`` (``name`` filter): artifacts planted
  with :meth:`FakeGitHubCI.add_artifact` (the comment links the traces artifact by id);
- issues: ``GET /repos/{o}/{r}/issues`` (``state``, ``labels``, paged with ``Link``),
  ``POST /repos/{o}/{r}/issues``, ``PATCH /repos/{o}/{r}/issues/{n}``; comments on an issue
  reuse the base class's ``/issues/{n}/comments``. Issue numbers start at 1001, so they
  never collide with the PR numbers tests use.

Standalone for ``ci/rehearse.sh``::

    python -m tests.ci.fakegithub_ext --port 0 --token TOKEN:LOGIN --repo o/r \\
        --pull 7:<40-hex head sha> --commit-pull <40-hex sha>:12:TITLE \\
        --url-file url.txt --state-out state.json
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.github.fakegithub import FakeGitHub

__all__ = ["FakeGitHubCI"]


class FakeGitHubCI(FakeGitHub):
    """:class:`FakeGitHub` with pulls and issues."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.pulls: dict[int, str] = {}  # number -> head SHA
        self.pull_heads: dict[int, tuple[str, str, str]] = {}  # number -> (repo, ref, state)
        self.issues: list[dict[str, Any]] = []
        self._next_issue = 1000
        self.artifacts: dict[int, list[dict[str, Any]]] = {}  # run id -> artifacts
        # number -> (reads, new head SHA): the PR is pushed to after that many GETs of it
        self.push_after_reads: dict[int, tuple[int, str]] = {}
        self.pull_reads: dict[int, int] = {}
        self.commit_pulls: dict[str, list[dict[str, Any]]] = {}  # sha -> PRs of that commit

    def add_pull(self, number: int, head_sha: str, *, head_repo: str | None = None,
                 head_ref: str | None = None, state: str = "open") -> None:
        """Register PR ``number`` with its head; by default a branch ``pr-N`` of this repo."""
        with self.lock:
            self.pulls[number] = head_sha
            self.pull_heads[number] = (head_repo or self.repo, head_ref or f"pr-{number}", state)

    def add_commit_pull(self, sha: str, number: int, title: str, *, merged: bool = True) -> None:
        """Plant PR ``number`` as one that produced commit ``sha`` (merged by default)."""
        with self.lock:
            self.commit_pulls.setdefault(sha, []).append({
                "number": number, "title": title, "state": "closed" if merged else "open",
                "merged_at": "2026-12-01T00:00:00Z" if merged else None,
                "html_url": f"https://github.example/{self.repo}/pull/{number}",
            })  # fmt: skip

    def _pull_json(self, n: int) -> dict[str, Any]:
        repo, ref, state = self.pull_heads[n]
        return {"number": n, "state": state,
                "head": {"sha": self.pulls[n], "ref": ref, "repo": {"full_name": repo}}}

    def add_artifact(self, run_id: int, name: str, artifact_id: int,
                     *, expired: bool = False) -> None:
        """Plant an artifact of workflow run ``run_id``."""
        with self.lock:
            self.artifacts.setdefault(run_id, []).append(
                {"id": artifact_id, "name": name, "expired": expired, "size_in_bytes": 1024}
            )

    def add_issue(self, author: str, title: str, body: str, *, state: str = "open",
                  labels: tuple[str, ...] = ()) -> dict[str, Any]:
        """Plant an issue as if ``author`` opened it."""
        with self.lock:
            self._next_issue += 1
            issue = {
                "number": self._next_issue,
                "title": title,
                "body": body,
                "state": state,
                "state_reason": None,
                "labels": [{"name": n} for n in labels],
                "user": {"login": author, "type": "Bot" if author.endswith("[bot]") else "User"},
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock())),
            }
            self.issues.append(issue)
            return dict(issue)

    def snapshot(self) -> dict[str, Any]:
        snap = super().snapshot()
        with self.lock:
            snap["issues"] = [dict(i) for i in self.issues]
            snap["pulls"] = {str(k): v for k, v in self.pulls.items()}
        return snap

    def _api(
        self,
        h: BaseHTTPRequestHandler,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: Any,
        token: str,
        login: str,
        send: bool = True,
    ) -> int:
        rest = path[len(f"/repos/{self.repo}/"):] if path.startswith(f"/repos/{self.repo}/") else ""

        def reply(status: int, data: Any, headers: dict[str, str] | None = None) -> int:
            if send:
                self._send(h, status, data, headers)
            return status

        m = re.fullmatch(r"actions/runs/(\d+)/artifacts", rest)
        if m and method == "GET":
            want = query.get("name", [""])[0]
            with self.lock:
                arts = [dict(a) for a in self.artifacts.get(int(m.group(1)), [])
                        if not want or a["name"] == want]
            return reply(200, {"total_count": len(arts), "artifacts": arts})
        m = re.fullmatch(r"commits/([0-9a-f]{40})/pulls", rest)
        if m and method == "GET":
            with self.lock:
                found = [dict(p) for p in self.commit_pulls.get(m.group(1), [])]
            return reply(200, found)
        m = re.fullmatch(r"pulls/(\d+)", rest)
        if m and method == "GET":
            n = int(m.group(1))
            with self.lock:
                self.pull_reads[n] = self.pull_reads.get(n, 0) + 1
                after = self.push_after_reads.get(n)
                if after is not None and self.pull_reads[n] > after[0]:
                    self.pulls[n] = after[1]  # someone pushed to the PR meanwhile
                data = self._pull_json(n) if n in self.pulls else None
            if data is None:
                return self._error(h, 404, "Not Found") if send else 404
            return reply(200, data)
        if rest == "pulls" and method == "GET":
            state = query.get("state", ["open"])[0]
            head = query.get("head", [""])[0]
            with self.lock:
                items = [self._pull_json(n) for n in sorted(self.pulls)]
            items = [p for p in items if state == "all" or p["state"] == state]
            if head:
                owner, _, ref = head.partition(":")
                items = [p for p in items if p["head"]["ref"] == ref
                         and p["head"]["repo"]["full_name"].split("/")[0] == owner]
            return reply(200, items)
        if rest == "issues" and method == "GET":
            state = query.get("state", ["open"])[0]
            labels = {x for x in query.get("labels", [""])[0].split(",") if x}
            per_page = min(100, max(1, int(query.get("per_page", ["30"])[0])))
            page = max(1, int(query.get("page", ["1"])[0]))
            with self.lock:
                items = [dict(i) for i in self.issues
                         if (state == "all" or i["state"] == state)
                         and labels <= {lab["name"] for lab in i["labels"]}]
            chunk = items[(page - 1) * per_page: page * per_page]
            headers = {}
            if page * per_page < len(items):
                base = f"http://127.0.0.1:{self.port}{self.prefix}{path}"
                q = f"state={state}&labels={','.join(sorted(labels))}&per_page={per_page}"
                headers["Link"] = f'<{base}?{q}&page={page + 1}>; rel="next"'
            return reply(200, chunk, headers)
        if rest == "issues" and method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("title"), str):
                return self._error(h, 422, "Validation Failed") if send else 422
            issue = self.add_issue(login, body["title"], str(body.get("body", "")),
                                   labels=tuple(body.get("labels", ())))
            return reply(201, issue)
        m = re.fullmatch(r"issues/(\d+)", rest)
        if m and method == "PATCH":
            n = int(m.group(1))
            with self.lock:
                found = [i for i in self.issues if i["number"] == n]
                if not found:
                    return self._error(h, 404, "Not Found") if send else 404
                issue = found[0]
                for k in ("title", "body", "state", "state_reason"):
                    if isinstance(body, dict) and k in body:
                        issue[k] = body[k]
                out = dict(issue)
            return reply(200, out)
        return super()._api(h, method, path, query, body, token, login, send)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.ci.fakegithub_ext")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--repo", default="octo/kernels")
    p.add_argument("--token", action="append", default=[], help="TOKEN:LOGIN (repeatable)")
    p.add_argument("--pull", action="append", default=[],
                   help="N:HEADSHA[:OWNER/REPO:BRANCH] (repeatable; default branch pr-N here)")
    p.add_argument("--commit-pull", action="append", default=[],
                   help="SHA:N:TITLE: PR N produced commit SHA (repeatable)")
    p.add_argument("--url-file", help="write the API URL here once listening")
    p.add_argument("--state-out", help="write the state JSON here on exit")
    args = p.parse_args(argv)
    tokens = dict(t.split(":", 1) for t in args.token) if args.token else None
    fake = FakeGitHubCI(tokens=tokens, repo=args.repo, port=args.port)
    for spec in args.pull:
        n, sha, *head = spec.split(":", 3)
        fake.add_pull(int(n), sha, head_repo=head[0] if head else None,
                      head_ref=head[1] if len(head) > 1 else None)
    for spec in args.commit_pull:
        sha, n, title = spec.split(":", 2)
        fake.add_commit_pull(sha, int(n), title)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with fake:
        if args.url_file:
            tmp = Path(args.url_file + ".tmp")
            tmp.write_text(fake.url + "\n")
            tmp.replace(args.url_file)
        print(f"FAKEGITHUB_URL={fake.url}", flush=True)
        stop.wait()
        if args.state_out:
            Path(args.state_out).write_text(json.dumps(fake.snapshot(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
