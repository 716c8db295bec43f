"""The one git fake: a :class:`~neuronasv.store.git.GitTransport` answering from a table.

Use it where a test is about what *neuronasv* does with git's answers (which commands it
sends, how it words a failure), not about git itself; tests of git behaviour (worktrees,
commit order, the results branch's pushes) run the real git (``SubprocessGit``).

    fake = FakeGit({("rev-parse", "--show-toplevel"): "/repo\\n"})
    git = Git("/repo", transport=fake)
    ...
    assert fake.calls[0] == ["rev-parse", "--show-toplevel"]

A reply is matched by the longest table key that is a prefix of the arguments; a
``str``/``bytes`` reply is a success, a :class:`GitResult` is returned as is, a callable
is called with the arguments. Unmatched commands succeed with no output (``strict=True``:
fail with exit 1 and "fake git: unexpected ...").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from neuronasv.store.git import GitResult

Reply = str | bytes | GitResult | Callable[[list[str]], GitResult]


@dataclass
class FakeGit:
    replies: Mapping[tuple[str, ...], Reply] = field(default_factory=dict)
    strict: bool = False
    calls: list[list[str]] = field(default_factory=list)
    cwds: list[str] = field(default_factory=list)
    envs: list[Mapping[str, str] | None] = field(default_factory=list)

    def __call__(
        self,
        args: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
    ) -> GitResult:
        argv = list(args)
        self.calls.append(argv)
        self.cwds.append(cwd)
        self.envs.append(env)
        keys = [k for k in self.replies if tuple(argv[: len(k)]) == k]
        if not keys:
            if self.strict:
                return GitResult(1, b"", f"fake git: unexpected {' '.join(argv)}")
            return GitResult(0, b"", "")
        reply = self.replies[max(keys, key=len)]
        if isinstance(reply, GitResult):
            return reply
        if isinstance(reply, str):
            return GitResult(0, reply.encode(), "")
        if isinstance(reply, bytes):
            return GitResult(0, reply, "")
        return reply(argv)
