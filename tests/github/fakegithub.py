"""A loopback stand-in for the GitHub REST API (http.server in a thread, 127.0.0.1 only).

It plays the parts neuronasv talks to, with GitHub's status codes, headers and paging:

- ``GET /user`` (403 "Resource not accessible by integration" for Actions tokens),
- ``GET|POST /repos/{owner}/{repo}/issues/{n}/comments`` (``per_page`` ≤ 100, default 30,
  ``Link`` header with ``next``/``last``/``first``/``prev``; 422 when a body is longer
  than ``max_body``),
- ``GET|PATCH|DELETE /repos/{owner}/{repo}/issues/comments/{id}``,
- ``POST /repos/{owner}/{repo}/statuses/{sha}``, ``GET .../commits/{sha}/statuses``,
- ``POST /repos/{owner}/{repo}/check-runs`` (403 for personal tokens, like GitHub),
- ``GET /_fake/state`` (no auth): comments, statuses, check runs and the request log as
  JSON, for tests that drive ``neuronasv`` in a subprocess.

Every answer carries ``x-ratelimit-*`` headers. Faults are scripted with
:meth:`FakeGitHub.add_fault` (``status``, ``secondary``, ``secondary_unsignalled``,
``429``, ``primary``, ``forbidden``, ``timeout_after_create``, ``disconnect_after_create``,
``deleted``: someone deleted the comment just before this request, which gets GitHub's 404;
``deleted_then_recreated``: the same, and another run of ours then created the comment
anew (``author``, ``body``); ``concurrent_comment``: another run of ours posted ``body``
as ``author`` on the issue just before this request, which then proceeds normally),
each matching a method and a path regex and firing ``times`` times. ``retry_after`` may be
any text (GitHub's is seconds; a broken proxy may send anything).

Reuse from other tests::

    from tests.github.fakegithub import FakeClock, FakeGitHub

    with FakeGitHub(tokens={"t0ken": "neuronasv-bot"}, repo="octo/kernels") as gh:
        gh.seed_comments(7, 250)                  # 250 comments by other people
        env = {"GITHUB_API_URL": gh.url, "GITHUB_REPOSITORY": "octo/kernels",
               "GITHUB_TOKEN": "t0ken"}
        ...                                       # run neuronasv comment --pr 7 ...
        assert len(gh.comments(7, author="neuronasv-bot", marker=MARKER)) == 1

(``tests/github/conftest.py`` also offers the ``fake_github`` fixture.) Standalone, e.g. for
a CI rehearsal::

    python -m tests.github.fakegithub --port 8765 --token t0ken:neuronasv-bot \\
        --repo octo/kernels --seed 7:250 [--state-out state.json]

prints ``FAKEGITHUB_URL=http://127.0.0.1:8765`` and serves until SIGINT/SIGTERM, then
writes the final state to ``--state-out`` if given. The token values are never logged.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["ACTIONS_BOT", "FakeClock", "FakeGitHub", "Fault", "RequestRecord"]

ACTIONS_BOT = "github-actions[bot]"
_SHA = re.compile(r"[0-9a-f]{40}")


class FakeClock:
    """An epoch clock that only moves when something sleeps on it; records every sleep.

    Pass ``Pacing(clock=clock.time, sleeper=clock.sleep)`` as the client's ``pacing``
    (and the same clock to :class:`FakeGitHub` so ``x-ratelimit-reset`` agrees).
    """

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def time(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += max(0.0, seconds)

    __call__ = time


@dataclass
class Fault:
    """A scripted misbehaviour: fires on matching requests, ``times`` times.

    Attributes:
        method: HTTP method or ``*``.
        path: regex searched in the request path (without the API prefix and query).
        kind: see the module docstring.
        status: the status for ``kind="status"`` (e.g. 502).
        retry_after: seconds for ``retry-after`` (``secondary``, ``429``).
        reset_in: seconds until ``x-ratelimit-reset`` (``primary``).
        times: how many requests it affects.
    """

    method: str
    path: str
    kind: str
    status: int = 502
    retry_after: int | str | None = None
    reset_in: int = 30
    times: int = 1
    fired: int = 0
    author: str = ""  # the other run of the race faults (default: the caller)
    body: str = ""  # ... and what the other run posted


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it (the Authorization header is not kept)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    login: str | None
    status: int = 0
    at: float = 0.0  # the server clock when the request arrived


@dataclass
class _State:
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1_000_000


class FakeGitHub:
    """The stand-in server. Use as a context manager or call :meth:`start`/:meth:`stop`.

    Args:
        tokens: token → login for personal/app tokens (``/user`` answers with the login).
        actions_tokens: tokens that behave like an Actions ``GITHUB_TOKEN``: ``/user`` is
            403 and their comments are authored by ``github-actions[bot]``.
        repo: the one repository that exists (``owner/name``).
        clock: epoch clock for timestamps and ``x-ratelimit-reset`` (``time.time``).
        prefix: API path prefix, e.g. ``/api/v3`` to play GitHub Enterprise Server.
        max_body: longest comment body accepted (GitHub: 65,536).
        hold_seconds: how long ``timeout_after_create`` holds its answer at most.
        port: 0 = any free port.
    """

    def __init__(
        self,
        *,
        tokens: Mapping[str, str] | None = None,
        actions_tokens: Iterable[str] = (),
        repo: str = "octo/kernels",
        clock: Callable[[], float] = time.time,
        prefix: str = "",
        max_body: int = 65_536,
        hold_seconds: float = 5.0,
        port: int = 0,
    ) -> None:
        self.tokens = dict(tokens if tokens is not None else {"test-token": "neuronasv-bot"})
        self.actions_tokens = set(actions_tokens)
        self.repo = repo
        self.clock = clock
        self.prefix = prefix.rstrip("/")
        self.max_body = max_body
        self.hold_seconds = hold_seconds
        self.faults: list[Fault] = []
        self.requests: list[RequestRecord] = []
        self.state = _State()
        self.lock = threading.RLock()
        self._release = threading.Event()
        self._remaining = 5000
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Base API URL to put in ``GITHUB_API_URL``."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def start(self) -> FakeGitHub:
        self._thread = threading.Thread(
            # A short poll interval: shutdown() waits up to one interval.
            target=self._server.serve_forever,
            args=(0.02,),
            daemon=True,
            name="fakegithub",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def release(self) -> None:
        """Let held (``timeout_after_create``) answers go."""
        self._release.set()

    # ------------------------------------------------------------------ state helpers

    def add_fault(self, method: str, path: str, kind: str, **kw: Any) -> Fault:
        """Script a fault (see :class:`Fault`); returns it so tests can read ``fired``."""
        fault = Fault(method.upper(), path, kind, **kw)
        with self.lock:
            self.faults.append(fault)
        return fault

    def _new_comment(self, pr: int, login: str, body: str) -> dict[str, Any]:
        with self.lock:
            self.state.next_id += 1
            cid = self.state.next_id
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock()))
            c = {
                "id": cid,
                "node_id": f"IC_{cid}",
                "url": f"{self.url}/repos/{self.repo}/issues/comments/{cid}",
                "html_url": f"https://github.com/{self.repo}/pull/{pr}#issuecomment-{cid}",
                "issue_url": f"{self.url}/repos/{self.repo}/issues/{pr}",
                "body": body,
                "user": {
                    "login": login,
                    "id": abs(hash(login)) % 10**8,
                    "type": "Bot" if login.endswith("[bot]") else "User",
                },
                "created_at": stamp,
                "updated_at": stamp,
                "author_association": "NONE",
            }
            self.state.comments.setdefault(pr, []).append(c)
            return c

    def add_comment(self, pr: int, author: str, body: str) -> dict[str, Any]:
        """Plant a comment as if ``author`` wrote it."""
        return self._new_comment(pr, author, body)

    def seed_comments(self, pr: int, n: int, *, author: str = "reviewer") -> None:
        """``n`` ordinary comments on ``pr`` by ``author``."""
        for i in range(n):
            self._new_comment(pr, author, f"LGTM, nit {i}")

    def comments(
        self, pr: int, *, author: str | None = None, marker: str | None = None
    ) -> list[dict[str, Any]]:
        """Copies of the comments on ``pr``, optionally filtered."""
        with self.lock:
            out = [dict(c) for c in self.state.comments.get(pr, [])]
        if author is not None:
            out = [c for c in out if c["user"]["login"] == author]
        if marker is not None:
            out = [c for c in out if marker in c["body"]]
        return out

    def statuses(self, sha: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(s) for s in self.state.statuses.get(sha, [])]

    @property
    def check_runs(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(c) for c in self.state.check_runs]

    def writes(self) -> list[RequestRecord]:
        """Requests that change state (POST/PATCH/PUT/DELETE), in order."""
        return [r for r in self.requests if r.method in ("POST", "PATCH", "PUT", "DELETE")]

    def snapshot(self) -> dict[str, Any]:
        """The state as JSON-able data (what ``GET /_fake/state`` returns)."""
        with self.lock:
            return {
                "comments": {str(k): v for k, v in self.state.comments.items()},
                "statuses": self.state.statuses,
                "check_runs": self.state.check_runs,
                "requests": [
                    {"method": r.method, "path": r.path, "status": r.status, "login": r.login}
                    for r in self.requests
                ],
            }

    # ------------------------------------------------------------------ HTTP

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "FakeGitHub/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: tests capture output and look for secrets in it

            def do_GET(self) -> None:
                fake._dispatch(self, "GET")

            def do_POST(self) -> None:
                fake._dispatch(self, "POST")

            def do_PATCH(self) -> None:
                fake._dispatch(self, "PATCH")

            def do_DELETE(self) -> None:
                fake._dispatch(self, "DELETE")

            def do_PUT(self) -> None:
                fake._dispatch(self, "PUT")

        return Handler

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        body: Any,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        raw = (
            b""
            if body is None
            else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        )
        h.send_response(status)
        h.send_header(
            "Content-Type",
            "text/html" if isinstance(body, str) else "application/json; charset=utf-8",
        )
        h.send_header("Content-Length", str(len(raw)))
        base = {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self._remaining),
            "x-ratelimit-reset": str(int(self.clock()) + 3600),
            "x-ratelimit-used": str(5000 - self._remaining),
            "x-ratelimit-resource": "core",
            "x-github-api-version-selected": "2022-11-28",
        }
        base.update(headers or {})
        for k, v in base.items():
            h.send_header(k, v)
        h.end_headers()
        try:
            h.wfile.write(raw)
            h.wfile.flush()
        except OSError:
            pass  # the client gave up (timeout test)

    def _error(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> int:
        body = {
            "message": message,
            "documentation_url": "https://docs.github.com/rest",
            "status": str(status),
            **extra,
        }
        self._send(h, status, body, headers)
        return status

    def _fault_for(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.fired < f.times and f.method in ("*", method) and re.search(f.path, path):
                    f.fired += 1
                    return f
        return None

    def _dispatch(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        path, query = parts.path, parse_qs(parts.query)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<invalid json>"
        auth = h.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else ""
        login = ACTIONS_BOT if token in self.actions_tokens else self.tokens.get(token)
        headers = {k.lower(): v for k, v in h.headers.items() if k.lower() != "authorization"}

        # Record on arrival (a held request must show up before it answers).
        record = RequestRecord(method, path, query, headers, body, login, 0, self.clock())
        with self.lock:
            index = len(self.requests)
            self.requests.append(record)
        status = 0
        try:
            status = self._route(h, method, path, query, body, token, login)
        finally:
            with self.lock:
                self.requests[index] = dataclasses.replace(record, status=status)

    def _route(
        self,
        h: BaseHTTPRequestHandler,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: Any,
        token: str,
        login: str | None,
    ) -> int:
        if path == "/_fake/state" and method == "GET":
            self._send(h, 200, self.snapshot())
            return 200
        if self.prefix:
            if not path.startswith(self.prefix + "/"):
                return self._error(h, 404, "Not Found")
            path = path[len(self.prefix) :]
        if h.headers.get("X-GitHub-Api-Version") is None or "json" not in h.headers.get(
            "Accept", ""
        ):
            return self._error(h, 400, "missing Accept or X-GitHub-Api-Version header")
        if login is None:
            return self._error(h, 401, "Bad credentials")

        fault = self._fault_for(method, path)
        if fault is not None:
            handled = self._apply_fault(h, fault, method, path, query, body, token, login)
            if handled:
                return handled
        with self.lock:
            self._remaining = max(0, self._remaining - 1)
        return self._api(h, method, path, query, body, token, login)

    def _apply_fault(
        self,
        h: BaseHTTPRequestHandler,
        f: Fault,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: Any,
        token: str,
        login: str,
    ) -> int:
        if f.kind == "status":
            self._send(h, f.status, "<html><body><h1>Unicorn!</h1>bad gateway</body></html>")
            return f.status
        if f.kind == "secondary":
            return self._error(
                h,
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes"
                " before you try again.",
                {"retry-after": str(f.retry_after or 60)},
            )
        if f.kind == "secondary_unsignalled":
            return self._error(h, 403, "You have exceeded a secondary rate limit.")
        if f.kind == "429":
            extra = {"retry-after": str(f.retry_after)} if f.retry_after is not None else {}
            return self._error(h, 429, "Too Many Requests", extra)
        if f.kind == "primary":
            reset = int(self.clock()) + f.reset_in
            return self._error(
                h,
                403,
                "API rate limit exceeded for user ID 1.",
                {
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-reset": str(reset),
                    "x-ratelimit-used": "5000",
                },
            )
        if f.kind == "forbidden":
            return self._error(h, 403, "Resource not accessible by integration")
        if f.kind in ("deleted", "deleted_then_recreated"):
            m = re.search(r"issues/comments/(\d+)$", path)
            where = None
            if m:
                with self.lock:
                    for pr, comments in self.state.comments.items():
                        if any(c["id"] == int(m.group(1)) for c in comments):
                            where = pr
                        comments[:] = [c for c in comments if c["id"] != int(m.group(1))]
            if f.kind == "deleted_then_recreated" and where is not None:
                self._new_comment(where, f.author or login, f.body)
            return self._error(h, 404, "Not Found")
        if f.kind == "concurrent_comment":
            m = re.search(r"issues/(\d+)/comments$", path)
            if m:
                self._new_comment(int(m.group(1)), f.author or login, f.body)
            return 0  # then this request is handled as usual
        if f.kind in ("timeout_after_create", "disconnect_after_create"):
            # Do the work, then fail to answer: the client cannot know it happened.
            self._api(h, method, path, query, body, token, login, send=False)
            if f.kind == "timeout_after_create":
                self._release.wait(self.hold_seconds)
                self._send(h, 201, {"message": "too late"})
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(2)
            return 599
        raise ValueError(f"unknown fault kind {f.kind!r}")

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
        def reply(status: int, data: Any, headers: Mapping[str, str] | None = None) -> int:
            if send:
                self._send(h, status, data, headers)
            return status

        def error(status: int, message: str, **extra: Any) -> int:
            if send:
                return self._error(h, status, message, **extra)
            return status

        if path == "/user" and method == "GET":
            if token in self.actions_tokens:
                return error(403, "Resource not accessible by integration")
            return reply(200, {"login": login, "id": 1, "type": "User"})

        repo_prefix = f"/repos/{self.repo}/"
        if not path.startswith(repo_prefix):
            return error(404, "Not Found")
        rest = path[len(repo_prefix) :]

        m = re.fullmatch(r"issues/(\d+)/comments", rest)
        if m:
            pr = int(m.group(1))
            if method == "GET":
                return self._list_comments(h, pr, path, query, send)
            if method == "POST":
                text = body.get("body") if isinstance(body, dict) else None
                if not isinstance(text, str) or not text:
                    return error(
                        422,
                        "Validation Failed",
                        errors=[
                            {"resource": "IssueComment", "code": "missing_field", "field": "body"}
                        ],
                    )
                if len(text) > self.max_body:
                    return error(
                        422,
                        "Validation Failed",
                        errors=[
                            {
                                "resource": "IssueComment",
                                "code": "custom",
                                "field": "body",
                                "message": self._too_long(),
                            }
                        ],
                    )
                return reply(201, self._new_comment(pr, login, text))
            return error(404, "Not Found")

        m = re.fullmatch(r"issues/comments/(\d+)", rest)
        if m:
            cid = int(m.group(1))
            with self.lock:
                found = [
                    (pr, c) for pr, cs in self.state.comments.items() for c in cs if c["id"] == cid
                ]
                if not found:
                    return error(404, "Not Found")
                pr, c = found[0]
                if method == "GET":
                    return reply(200, dict(c))
                if c["user"]["login"] != login:
                    return error(403, "Must have admin rights to Repository.")
                if method == "DELETE":
                    self.state.comments[pr].remove(c)
                    return reply(204, None)
                if method == "PATCH":
                    text = body.get("body") if isinstance(body, dict) else None
                    if not isinstance(text, str) or not text:
                        return error(422, "Validation Failed")
                    if len(text) > self.max_body:
                        return error(
                            422,
                            "Validation Failed",
                            errors=[
                                {
                                    "resource": "IssueComment",
                                    "code": "custom",
                                    "field": "body",
                                    "message": self._too_long(),
                                }
                            ],
                        )
                    c["body"] = text
                    c["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock()))
                    return reply(200, dict(c))
            return error(404, "Not Found")

        m = re.fullmatch(r"statuses/([^/]+)", rest)
        if m and method == "POST":
            sha = m.group(1)
            if not _SHA.fullmatch(sha):
                return error(422, "No commit found for SHA: " + sha[:50])
            if not isinstance(body, dict) or body.get("state") not in (
                "error",
                "failure",
                "pending",
                "success",
            ):
                return error(422, "Validation Failed")
            if len(str(body.get("description", ""))) > 140:
                return error(
                    422,
                    "Validation Failed",
                    errors=[
                        {
                            "resource": "Status",
                            "code": "custom",
                            "field": "description",
                            "message": "description is too long (maximum is 140 characters)",
                        }
                    ],
                )
            with self.lock:
                status = {**body, "id": len(self.state.statuses) + 1, "creator": {"login": login}}
                self.state.statuses.setdefault(sha, []).append(status)
            return reply(201, status)
        m = re.fullmatch(r"commits/([0-9a-f]{40})/statuses", rest)
        if m and method == "GET":
            return reply(200, list(reversed(self.statuses(m.group(1)))))

        if rest == "check-runs" and method == "POST":
            if token not in self.actions_tokens and not login.endswith("[bot]"):
                return error(403, "You must authenticate via a GitHub App.")
            with self.lock:
                run = {**(body or {}), "id": 500 + len(self.state.check_runs)}
                self.state.check_runs.append(run)
            return reply(201, run)
        return error(404, "Not Found")

    def _too_long(self) -> str:
        return f"body is too long (maximum is {self.max_body} characters)"

    def _list_comments(
        self, h: BaseHTTPRequestHandler, pr: int, path: str, query: dict[str, list[str]], send: bool
    ) -> int:
        try:
            per_page = min(100, max(1, int(query.get("per_page", ["30"])[0])))
            page = max(1, int(query.get("page", ["1"])[0]))
        except ValueError:
            per_page, page = 30, 1
        items = self.comments(pr)
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        base = f"http://127.0.0.1:{self.port}{self.prefix}{path}"

        def link(p: int, rel: str) -> str:
            return f'<{base}?per_page={per_page}&page={p}>; rel="{rel}"'

        links = []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        headers = {"Link": ", ".join(links)} if links else {}
        if send:
            self._send(h, 200, chunk, headers)
        return 200


def main(argv: list[str] | None = None) -> int:
    """Run the stand-in until SIGINT/SIGTERM (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m tests.github.fakegithub")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--repo", default="octo/kernels")
    p.add_argument(
        "--token",
        action="append",
        default=[],
        help="TOKEN:LOGIN for a personal/app token (repeatable)",
    )
    p.add_argument(
        "--actions-token",
        action="append",
        default=[],
        help="a token that behaves like the Actions GITHUB_TOKEN (repeatable)",
    )
    p.add_argument(
        "--seed",
        action="append",
        default=[],
        help="PR:N — N comments by 'reviewer' on PR (repeatable)",
    )
    p.add_argument("--prefix", default="", help="API path prefix, e.g. /api/v3 (GHES)")
    p.add_argument("--max-body", type=int, default=65_536)
    p.add_argument("--state-out", help="write the final state JSON here on exit")
    args = p.parse_args(argv)
    tokens = dict(t.split(":", 1) for t in args.token) if args.token else None
    fake = FakeGitHub(
        tokens=tokens,
        actions_tokens=args.actions_token,
        repo=args.repo,
        prefix=args.prefix,
        max_body=args.max_body,
        port=args.port,
    )
    for s in args.seed:
        pr, n = s.split(":", 1)
        fake.seed_comments(int(pr), int(n))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with fake:
        print(f"FAKEGITHUB_URL={fake.url}", flush=True)
        stop.wait()
        if args.state_out:
            with open(args.state_out, "w", encoding="utf-8") as fh:
                json.dump(fake.snapshot(), fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
