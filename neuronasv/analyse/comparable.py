"""Are base and head comparable? The one decision ``compare`` makes before any statistics.

With neuronasv fingerprints (the sidecar next to each results file) both sides must agree
on the machine and every :data:`INCOMPARABLE_KEYS` entry (backend, device model); a key
missing on one side is *unknown*, and unknown is never taken for equal.

Without a fingerprint on either side (plain ``asv run`` results) the identity is what asv
itself recorded: the machine, the environment name, the python and the requirements and
environment variables of the run. Equal on both sides: comparable. Device-time series
(``devtime_``) need a backend, which plain asv does not record: they stay refused.

A sidecar that exists but cannot be read is not "plain asv": it is a results problem,
named as such (:class:`ResultsError`, exit 5), not an incomparability.
"""

from __future__ import annotations

from collections.abc import Mapping

from neuronasv.errors import IncomparableError, ResultsError, UsageError
from neuronasv.model import History

__all__ = [
    "INCOMPARABLE_KEYS",
    "check_comparable",
    "comparability_problems",
    "incomparable",
    "pick_machine",
]

#: Fingerprint keys whose difference makes base and head incomparable.
INCOMPARABLE_KEYS = ("backend", "device_model")

#: What asv records about a run's environment, compared for plain asv results.
ASV_IDENTITY_KEYS = ("env_name", "python", "requirements", "env_vars")


def incomparable(
    base_machine: str,
    head_machine: str,
    fp_base: Mapping[str, str],
    fp_head: Mapping[str, str],
) -> list[str]:
    """Why base and head are not known to be comparable by their fingerprints (empty:
    they are). A key missing on either side is unknown, never equal."""
    problems: list[str] = []
    if base_machine != head_machine:
        problems.append(f"machine {base_machine!r} vs {head_machine!r}")
    for k in INCOMPARABLE_KEYS:
        b, h = fp_base.get(k), fp_head.get(k)
        if b is not None and h is not None:
            if b != h:
                problems.append(f"{k} {b!r} vs {h!r}")
            continue
        sides = [side for side, v in (("base", b), ("head", h)) if v is None]
        problems.append(f"{k} unknown at {' and '.join(sides)} (no fingerprint)")
    return problems


def _is_device_time(benchmark: str) -> bool:
    leaf = benchmark.rsplit(".", 1)[-1]
    return leaf.startswith("devtime_") or "devtime" in leaf


def _plain_problems(history: History, sides: tuple[tuple[str, str], tuple[str, str]]) -> list[str]:
    (bm, base), (hm, head) = sides
    problems = [f"machine {bm!r} vs {hm!r}"] if bm != hm else []
    ib = history.asv_identity.get((bm, base), {})
    ih = history.asv_identity.get((hm, head), {})
    for k in ASV_IDENTITY_KEYS:
        if ib.get(k) != ih.get(k):
            problems.append(f"asv {k} {ib.get(k)!r} vs {ih.get(k)!r}")
    devtime = sorted(
        {
            s.series.benchmark
            for s in history.series
            if _is_device_time(s.series.benchmark)
            and ((s.machine == bm and s.at(base) is not None)
                 or (s.machine == hm and s.at(head) is not None))
        }
    )  # fmt: skip
    if devtime:
        more = f" and {len(devtime) - 1} more" if len(devtime) > 1 else ""
        problems.append(
            f"backend unknown at base and head (no fingerprint) for device-time series"
            f" {devtime[0]}{more}"
        )
    return problems


def comparability_problems(
    history: History, base: str, head: str, base_machine: str, head_machine: str
) -> list[str]:
    """Why ``base`` and ``head`` are not known to be comparable (empty: they are).

    Raises:
        ResultsError: a side has no fingerprint because its sidecar could not be read.
    """
    fp_b = history.fingerprints.get((base_machine, base), {})
    fp_h = history.fingerprints.get((head_machine, head), {})
    for (m, c), fp in (((base_machine, base), fp_b), ((head_machine, head), fp_h)):
        why = history.unreadable_sidecars.get((m, c))
        if not fp and why is not None:
            raise ResultsError(
                f"the fingerprint of {c[:12]} on {m!r} is unknown: {why}",
                hint="re-run `neuronasv run` for that commit, or remove the damaged sidecar"
                " to compare it as plain asv results",
            )
    if not fp_b and not fp_h:
        return _plain_problems(history, ((base_machine, base), (head_machine, head)))
    return incomparable(base_machine, head_machine, fp_b, fp_h)


def pick_machine(history: History, base: str, head: str, machine: str | None) -> str:
    """``machine`` when given, else the one machine with results for both commits.

    Raises:
        UsageError: no machine, or several, has both.
    """
    if machine is not None:
        return machine
    has: dict[str, set[str]] = {}
    for s in history.series:
        for p in s.points:
            if p.commit in (base, head):
                has.setdefault(s.machine, set()).add(p.commit)
    both = sorted(m for m, cs in has.items() if cs == {base, head})
    if len(both) == 1:
        return both[0]
    if not both:
        raise UsageError(
            f"no machine has results for both {base[:12]} and {head[:12]}"
            f" (machines with either: {', '.join(sorted(has)) or 'none'})"
        )
    raise UsageError(
        f"results for both commits on several machines ({', '.join(both)}):"
        " choose one with --machine"
    )


def check_comparable(
    history: History, base: str, head: str, bm: str, hm: str, *, force: bool
) -> list[str]:
    """Why base and head may not be comparable (empty: they are).

    Raises:
        IncomparableError: there is a reason and ``force`` is not given.
    """
    problems = comparability_problems(history, base, head, bm, hm)
    if problems and not force:
        unknown = any("unknown" in p for p in problems)
        raise IncomparableError(
            "base and head are not known to be comparable: " + "; ".join(problems),
            hint=(
                "record both with `neuronasv run` (it writes the fingerprint sidecar next to"
                " each results file), or pass --force to compare anyway"
                if unknown
                else "measure both on the same machine, or pass --force to compare anyway"
            ),
        )
    return problems
