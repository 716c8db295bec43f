"""A small GitHub REST client on ``requests`` that survives GitHub's limits and faults.

Configuration comes from the Actions environment (:meth:`GitHubClient.from_env`):
``GITHUB_API_URL`` (GitHub Enterprise Server works: ``https://ghe.example/api/v3``),
``GITHUB_REPOSITORY`` (``owner/name``) and ``GITHUB_TOKEN``. The token is sent only in the
``Authorization`` header, only to the configured API origin, and never appears in a repr,
log line or exception message (messages built from responses are redacted as well).

Behaviour, following GitHub's published rules for REST clients:

- ``retry-after`` is honoured; with ``x-ratelimit-remaining: 0`` the client waits until
  ``x-ratelimit-reset``; a 403/429 that says "rate limit" but carries neither header waits
  at least 60 s, then backs off exponentially with jitter.
- 5xx answers, connection failures and timeouts are retried with exponential backoff and
  jitter — except for non-idempotent writes (POST), where a timeout or 5xx may have been
  applied: those raise :class:`AmbiguousWriteError` so the caller can look before it
  retries (a comment is never duplicated, see :mod:`neuronasv.github.comments`).
- Writes are spaced at least ``min_write_interval`` (1 s) apart.
- Every wait is bounded (``max_single_wait``, ``max_total_wait``, ``max_attempts``); when a
  bound is hit the client raises :class:`~neuronasv.errors.GitHubRateLimitError` or
  :class:`~neuronasv.errors.GitHubError` instead of hanging a CI job.
- A 403 without rate-limit signals is :class:`~neuronasv.errors.GitHubPermissionError`
  whose hint names the workflow's ``permissions:`` entry the call needs.
- 422 is :class:`GitHubValidationError` (``too_long`` tells "body is too long").

The clock (epoch seconds) and the sleeper are injected, so tests never sleep: they
record the requested sleeps and assert on them.
"""

from __future__ import annotations

import email.utils
import json as jsonlib
import logging
import math
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import requests

from neuronasv import __version__
from neuronasv.errors import (
    GitHubError,
    GitHubPermissionError,
    GitHubRateLimitError,
    UsageError,
)

__all__ = [
    "ACTIONS_BOT",
    "API_VERSION",
    "DEFAULT_API_URL",
    "AmbiguousWriteError",
    "GitHubClient",
    "GitHubValidationError",
    "Pacing",
    "RetryPolicy",
]

log = logging.getLogger("neuronasv.github")

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
#: Author of comments made with an Actions ``GITHUB_TOKEN`` (its ``/user`` is forbidden).
ACTIONS_BOT = "github-actions[bot]"

_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})
_RETRY_STATUS = frozenset({500, 502, 503, 504})


class _Retry(NamedTuple):
    """What one failed attempt asks for: the wait, the reason shown, the error raised when the
    retries run out, and whether GitHub signalled the wait (a rate limit without its headers
    doubles the next one)."""

    wait: float
    reason: str
    error: type[GitHubError]
    signalled: bool = True


class AmbiguousWriteError(GitHubError):
    """A write timed out or got a 5xx after it was sent: it may or may not have happened.

    The caller must check the server's state before repeating it.
    """


class GitHubValidationError(GitHubError):
    """GitHub answered 422 Unprocessable Entity.

    Attributes:
        too_long: the error says a field (a comment body) is too long.
    """

    def __init__(self, message: str, *, too_long: bool = False, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.too_long = too_long


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on retries and waits (seconds).

    Attributes:
        max_attempts: tries per request, all causes together.
        backoff_base: first backoff after a 5xx/timeout; doubles each retry.
        backoff_max: cap of one 5xx/timeout backoff.
        jitter: extra random fraction added to computed waits (0.25 = up to +25 %).
        min_rate_limit_wait: first wait after a 403/429 rate limit without headers.
        max_single_wait: a longer required wait (a far ``x-ratelimit-reset``) fails at once.
        max_total_wait: all waits of one request together.
        min_write_interval: minimum spacing of writes (POST/PATCH/PUT/DELETE).
    """

    max_attempts: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    jitter: float = 0.25
    min_rate_limit_wait: float = 60.0
    max_single_wait: float = 900.0
    max_total_wait: float = 1800.0
    min_write_interval: float = 1.0


@dataclass(frozen=True)
class Pacing:
    """How a :class:`GitHubClient` tells time and waits (inject fakes in tests).

    Attributes:
        clock: epoch seconds (``time.time``); used for ``x-ratelimit-reset`` and spacing.
        sleeper: ``time.sleep``-like; every wait goes through it.
        rng: random source for jitter (None: a fresh ``random.Random``; seed it in tests).
    """

    clock: Callable[[], float] = time.time
    sleeper: Callable[[float], None] = time.sleep
    rng: random.Random | None = None


def _retry_after_seconds(value: str | None, clock: Callable[[], float]) -> float | None:
    """``retry-after`` as seconds from now: delta-seconds or an HTTP date.

    None when absent or unparseable (garbage, a negative, NaN or a naive date): the
    caller then falls back to the other rate-limit signals and its own backoff, never
    to a crash or an endless wait.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        secs = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        try:
            return max(0.0, when.timestamp() - clock())
        except (OverflowError, OSError, ValueError):
            return None
    if not math.isfinite(secs) or secs < 0:
        return None
    return secs


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class GitHubClient:
    """GitHub REST client bound to one repository.

    Args:
        token: the token (None = anonymous, for dry runs and public reads).
        repository: ``owner/name``.
        api_url: REST base URL (``GITHUB_API_URL``).
        session: a ``requests.Session`` (a new one by default).
        timeout: ``(connect, read)`` seconds per HTTP request.
        policy: retry bounds.
        pacing: the clock, the sleep and the jitter's random source (real ones by default).
    """

    def __init__(
        self,
        token: str | None,
        repository: str,
        *,
        api_url: str = DEFAULT_API_URL,
        session: requests.Session | None = None,
        timeout: float | tuple[float, float] = (10.0, 30.0),
        policy: RetryPolicy | None = None,
        pacing: Pacing | None = None,
    ) -> None:
        owner, sep, name = repository.partition("/")
        if not (sep and owner and name) or "/" in name or any(c.isspace() for c in repository):
            raise UsageError(f"repository must be 'owner/name', got {repository!r}")
        scheme, netloc = _origin(api_url)
        if scheme not in ("http", "https") or not netloc:
            raise UsageError(f"GITHUB_API_URL must be an http(s) URL, got {api_url!r}")
        self.repository = repository
        self.api_url = api_url.rstrip("/")
        self._token = token or None
        self._session = session or requests.Session()
        pace = pacing or Pacing()
        self._clock = pace.clock
        self._sleep = pace.sleeper
        self._timeout = timeout
        self.policy = policy or RetryPolicy()
        self._rng = pace.rng or random.Random()
        self._last_write: float | None = None
        self._login_asked = False
        self._login: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> GitHubClient:
        """Build a client from ``GITHUB_API_URL``, ``GITHUB_REPOSITORY`` and ``GITHUB_TOKEN``.

        Raises:
            UsageError: ``GITHUB_REPOSITORY`` is not set.
        """
        env = os.environ if environ is None else environ
        repo = env.get("GITHUB_REPOSITORY", "")
        if not repo:
            raise UsageError(
                "GITHUB_REPOSITORY is not set",
                hint="set it to owner/name (GitHub Actions sets it for you) or use --repo",
            )
        return cls(
            env.get("GITHUB_TOKEN") or None,
            repo,
            api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL,
            **kwargs,
        )

    @property
    def has_token(self) -> bool:
        return self._token is not None

    def __repr__(self) -> str:
        token = "***" if self._token else "None"
        return (
            f"GitHubClient(api_url={self.api_url!r}, repository={self.repository!r}, token={token})"
        )

    # ------------------------------------------------------------------ helpers

    def redact(self, text: str) -> str:
        """``text`` with the token (if any) replaced by ``***``."""
        return text.replace(self._token, "***") if self._token else text

    def repo_path(self, suffix: str) -> str:
        """``/repos/owner/name`` + ``suffix``."""
        return f"/repos/{self.repository}{suffix}"

    def _url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            # Pagination links come from the server: never send the token elsewhere.
            if _origin(path) != _origin(self.api_url) or not path.startswith(self.api_url):
                raise GitHubError(
                    f"refusing to follow a link outside {self.api_url}: {self.redact(path)[:200]}"
                )
            return path
        return f"{self.api_url}/{path.lstrip('/')}"

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"neuronasv/{__version__}",
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _jittered(self, wait: float) -> float:
        return wait * (1.0 + self.policy.jitter * self._rng.random())

    def _space_writes(self) -> None:
        if self._last_write is None:
            return
        elapsed = self._clock() - self._last_write
        gap = min(self.policy.min_write_interval, self.policy.min_write_interval - elapsed)
        if gap > 0:
            log.debug("spacing writes: waiting %.2f s", gap)
            self._sleep(gap)

    def _message(self, resp: requests.Response) -> str:
        try:
            data = resp.json()
        except ValueError:
            return self.redact(resp.text[:300].strip()) or resp.reason or ""
        if isinstance(data, Mapping):
            msg = str(data.get("message", ""))
            errors = data.get("errors")
            if isinstance(errors, list):
                details = [
                    str(e.get("message") or e.get("code") or "")
                    if isinstance(e, Mapping)
                    else str(e)
                    for e in errors
                ]
                details = [d for d in details if d]
                if details:
                    msg += ": " + "; ".join(details)
            return self.redact(msg[:500])
        return self.redact(str(data)[:300])

    def _rate_limit_wait(self, resp: requests.Response, unsignalled: int) -> float | None:
        """Seconds to wait if ``resp`` is a rate limit, else None."""
        h = resp.headers
        retry_after = _retry_after_seconds(h.get("retry-after"), self._clock)
        if retry_after is not None:
            return retry_after
        if h.get("x-ratelimit-remaining") == "0" and h.get("x-ratelimit-reset"):
            try:
                reset = float(h["x-ratelimit-reset"])
            except ValueError:
                reset = self._clock() + self.policy.min_rate_limit_wait
            # +1 s: the reset second itself may still count against the old window.
            return max(0.0, reset - self._clock()) + 1.0
        if resp.status_code == 429 or (
            resp.status_code == 403 and "rate limit" in self._message(resp).lower()
        ):
            return self.policy.min_rate_limit_wait * (2.0**unsignalled)
        return None

    # ------------------------------------------------------------------ requests

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        allow: Sequence[int] = (),
        idempotent: bool | None = None,
        permission: str | None = None,
    ) -> requests.Response:
        """Send one API request with retries; return the response (2xx or in ``allow``).

        Args:
            method: HTTP method.
            path: ``/repos/...`` (joined to ``api_url``) or an absolute same-origin URL.
            json: JSON body.
            params: query parameters.
            allow: non-2xx statuses to return instead of raising (e.g. 403 on ``/user``).
            idempotent: whether repeating the request is harmless; default: every method
                but POST.
            permission: the workflow permission this call needs (``pull-requests: write``),
                named in the hint of a permission error.

        Raises:
            GitHubPermissionError: 401, or 403 without rate-limit signals.
            GitHubRateLimitError: still rate limited after the bounded waits.
            GitHubValidationError: 422.
            AmbiguousWriteError: a non-idempotent write timed out or got a 5xx.
            GitHubError: other failures (404, retries exhausted, ...).
        """
        method = method.upper()
        url = self._url(path)
        shown = self.redact(urlsplit(url).path)
        if idempotent is None:
            idempotent = method in _IDEMPOTENT
        policy = self.policy
        waited = 0.0
        unsignalled = 0
        attempt = 0
        while True:
            attempt += 1
            resp, failure = self._send(method, url, shown, json=json, params=params)
            if resp is None:
                assert failure is not None
                retry = self._after_failure(method, shown, failure, idempotent, attempt)
            elif 200 <= resp.status_code < 300 or resp.status_code in allow:
                return resp
            else:
                again = self._after_status(method, shown, resp, idempotent, attempt, unsignalled)
                if again is None:
                    raise self._error(method, shown, resp, permission)
                retry, unsignalled = again, unsignalled + (not again.signalled)
            wait = self._jittered(retry.wait)
            if attempt >= policy.max_attempts or waited + wait > policy.max_total_wait:
                raise retry.error(
                    f"{method} {shown}: giving up after {attempt} attempts and {waited:.0f} s"
                    f" of waiting (last: {retry.reason})",
                    hint="GitHub may be degraded (https://www.githubstatus.com); re-run the job",
                )
            log.info("%s %s: %s; retrying in %.1f s", method, shown, retry.reason, wait)
            self._sleep(wait)
            waited += wait

    def _send(
        self, method: str, url: str, shown: str, *, json: Any, params: Mapping[str, Any] | None
    ) -> tuple[requests.Response | None, requests.RequestException | None]:
        """One attempt: the response, or the transport failure (writes spaced and stamped)."""
        is_write = method not in ("GET", "HEAD", "OPTIONS")
        if is_write:
            self._space_writes()
        try:
            resp = self._session.request(
                method,
                url,
                headers=self._headers(),
                json=json,
                params=params,
                timeout=self._timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            return None, exc
        finally:
            if is_write:
                self._last_write = self._clock()
        log.debug("%s %s -> %d", method, shown, resp.status_code)
        return resp, None

    def _backoff(self, attempt: int) -> float:
        return min(self.policy.backoff_max, self.policy.backoff_base * 2.0 ** (attempt - 1))

    def _after_failure(
        self,
        method: str,
        shown: str,
        failure: requests.RequestException,
        idempotent: bool,
        attempt: int,
    ) -> _Retry:
        """The retry after a transport failure; a write that may have been sent is not retried."""
        what = f"{type(failure).__name__}: {self.redact(str(failure))[:300]}"
        sent = not isinstance(failure, requests.ConnectTimeout)
        log.debug("%s %s failed: %s", method, shown, what)
        if sent and not idempotent:
            raise AmbiguousWriteError(
                f"{method} {shown} may or may not have been applied ({what})"
            ) from None
        return _Retry(self._backoff(attempt), what, GitHubError)

    def _after_status(
        self,
        method: str,
        shown: str,
        resp: requests.Response,
        idempotent: bool,
        attempt: int,
        unsignalled: int,
    ) -> _Retry | None:
        """The retry after a non-2xx answer: a rate limit or a 5xx; None when it is final."""
        status = resp.status_code
        rl_wait = self._rate_limit_wait(resp, unsignalled) if status in (403, 429) else None
        if rl_wait is not None:
            if rl_wait > self.policy.max_single_wait:
                raise GitHubRateLimitError(
                    f"{method} {shown}: rate limited; GitHub asks to wait {rl_wait:.0f} s,"
                    f" more than the {self.policy.max_single_wait:.0f} s allowed",
                    hint="retry later, or use a token with a larger quota",
                )
            signalled = bool(
                resp.headers.get("retry-after") or resp.headers.get("x-ratelimit-remaining") == "0"
            )
            return _Retry(rl_wait, f"rate limited ({status})", GitHubRateLimitError, signalled)
        if status not in _RETRY_STATUS:
            return None
        if not idempotent:
            raise AmbiguousWriteError(
                f"{method} {shown} got {status} {resp.reason}; it may have been applied"
            )
        return _Retry(self._backoff(attempt), f"{status} {resp.reason}", GitHubError)

    def _error(
        self, method: str, shown: str, resp: requests.Response, permission: str | None
    ) -> GitHubError:
        status, msg = resp.status_code, self._message(resp)
        head = f"{method} {shown}: {status} {resp.reason}" + (f": {msg}" if msg else "")
        if status == 401:
            return GitHubPermissionError(head, hint="GITHUB_TOKEN is missing, expired or invalid")
        if status == 403:
            need = permission or "the permission this call needs"
            return GitHubPermissionError(
                head,
                hint=(
                    f"grant it in the workflow's `permissions:` block ({need}); pull requests"
                    " from forks get a read-only token, so comment from a `workflow_run` job"
                ),
            )
        if status == 422:
            low = msg.lower()
            return GitHubValidationError(head, too_long="too long" in low or "is too large" in low)
        if status == 404:
            return GitHubError(
                head,
                hint=f"check GITHUB_REPOSITORY ({self.repository}) and the number/SHA; a token"
                " without access also sees 404",
            )
        return GitHubError(head)

    def get_json(self, path: str, **kwargs: Any) -> Any:
        """GET ``path`` and decode its JSON."""
        return self._decode(self.request("GET", path, **kwargs))

    def _decode(self, resp: requests.Response) -> Any:
        try:
            return resp.json()
        except ValueError:
            raise GitHubError(
                f"{urlsplit(resp.url).path}: response is not JSON ({resp.status_code})"
            ) from None

    def paginate(
        self, path: str, params: Mapping[str, Any] | None = None, *, max_pages: int = 100
    ) -> Iterator[Any]:
        """Yield the items of a list endpoint across all pages (``Link: rel="next"``)."""
        url: str = path
        query: Mapping[str, Any] | None = {**(params or {}), "per_page": 100}
        for _ in range(max_pages):
            resp = self.request("GET", url, params=query)
            data = self._decode(resp)
            if not isinstance(data, list):
                raise GitHubError(f"{urlsplit(resp.url).path}: expected a JSON list")
            yield from data
            nxt = resp.links.get("next", {}).get("url")
            if not nxt:
                return
            url, query = nxt, None  # the next link carries the query already
        raise GitHubError(f"{path}: more than {max_pages} pages; stopping")

    def login(self) -> str | None:
        """The token's own login (``GET /user``), or None when ``/user`` is forbidden.

        An Actions ``GITHUB_TOKEN`` (an installation token) gets 403/404 there; its
        comments are authored by :data:`ACTIONS_BOT`.
        """
        if not self._login_asked:
            resp = self.request("GET", "/user", allow=(403, 404))
            login = None
            if resp.status_code == 200:
                data = self._decode(resp)
                if isinstance(data, Mapping) and isinstance(data.get("login"), str):
                    login = data["login"]
            self._login, self._login_asked = login, True
        return self._login

    def dumps(self, obj: Any) -> str:
        """JSON for logs and dry runs (redacted)."""
        return self.redact(jsonlib.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False))
