"""Verdicts recomputed by trusted code from an untrusted run's numbers.

The PR benchmark job runs the PR's code, so everything it uploads is untrusted: its
findings, its verdicts, its sentences, its links. The privileged comment step
(``neuronasv/ci/pr_comment.py``) believes none of that. It takes the *numbers* — the asv results
folder ``neuronasv run`` wrote (samples, values, the sidecars' op tables, calls and
bytes per op) and the rounds document of ``neuronasv confirm`` — each read by a
schema-checking loader (that I/O is the caller's: ``load_history``,
``RoundsDocument.loads``), and recomputes every verdict and every sentence here with the
same public entry points ``neuronasv compare`` and ``neuronasv confirm`` use
(:func:`neuronasv.analyse.pairwise.compare`, :func:`neuronasv.analyse.confirm.confirm`
on a :class:`~neuronasv.analyse.replay.ReplayRunner`).

Free text the run could choose never passes through (:func:`sanitize`):

- the machine name is kept only if it matches :data:`MACHINE_RE`, else shown as
  :data:`UNNAMED_MACHINE`;
- fingerprint entries are kept only when key and value match :data:`FP_KEY_RE` /
  :data:`FP_VALUE_RE` (a dropped ``backend`` or ``device_model`` makes the identity
  unknown, which ``compare`` refuses);
- units outside the one registry :mod:`neuronasv.units` (the one ``compare`` and
  ``confirm`` use: time, bytes, an exact metric's unit) become ``unit``;
- op tables keep their numbers and op names, not their warnings or trace files;
  an op's ``roofline_bound`` is kept only when it is one of the labels the roofline
  writes (:func:`known_bound`); a canary reading keeps its numbers, its kernel's name
  only when it is one :mod:`neuronasv.measure.canary` writes (:data:`CANARY_RE`) and of
  its device state only ``start.*``/``end.*`` entries of plain words
  (:data:`STATE_VALUE_RE`: clocks, throttle reasons), so device health and the runner's
  shift (issue 39) are judged here on the same numbers as in the run;
- the machine's state at each run's start and end (numbers only) is kept;
- load errors (file names the run chose) become one sentence with their count.

Series identities (benchmark, params, workload, shape, dtype, op) are the one kind of
string kept: they name what was measured, and every renderer shows them escaped inside
code spans. Labels, links, reasons and settings are not read at all.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping

from neuronasv.analyse.acks import Acknowledgement
from neuronasv.analyse.confirm import confirm, suspects
from neuronasv.analyse.floors import FloorKey, NoiseFloor
from neuronasv.analyse.pairwise import compare
from neuronasv.analyse.replay import ReplayRunner, missing_rounds
from neuronasv.errors import CorruptResultsError
from neuronasv.model import FindingsDocument, History, Series
from neuronasv.model.profile import CanaryReading, WorkloadProfile
from neuronasv.model.rounds import RoundsDocument
from neuronasv.units import known_unit

__all__ = [
    "CANARY_RE",
    "FP_KEY_RE",
    "FP_VALUE_RE",
    "MACHINE_RE",
    "UNNAMED_MACHINE",
    "known_bound",
    "recompute",
    "sanitize",
]

MACHINE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
UNNAMED_MACHINE = "unnamed-runner"
FP_KEY_RE = re.compile(r"[a-z][a-z0-9_]{0,39}")
# Versions, device and CPU model names: "2.13.0+cpu", "NVIDIA H100 80GB HBM3",
# "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "trn2.48xlarge".
FP_VALUE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._+()@,-]{0,79}")
#: A canary kernel's name as :class:`neuronasv.measure.canary.CanaryKernel` writes it.
CANARY_RE = re.compile(r"canary\.[a-z]{1,20}\.[A-Za-z0-9.+-]{1,80}")
#: A canary reading's device-state entry kept: ``start.``/``end.`` + a key, a plain value.
STATE_KEY_RE = re.compile(r"(?:start|end)\.[a-z0-9_]{1,40}")
STATE_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:+-]{0,60}")


def _clean_fingerprint(fp: Mapping[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in fp.items()
        if FP_KEY_RE.fullmatch(k) and FP_VALUE_RE.fullmatch(v) and not v.endswith(" ")
    }


def known_bound(text: str | None) -> str | None:
    """``text`` when it is a label :func:`neuronasv.measure.fractions.roofline_label`
    writes (``compute``, ``memory; assumed causal``, ...), else None."""
    from neuronasv.measure.roofline import ASSUMED_CAUSAL, BANDWIDTH_ONLY

    if not text:
        return None
    parts = text.split("; ")
    ok = parts[0] in ("compute", "memory", BANDWIDTH_ONLY) and all(
        p == ASSUMED_CAUSAL for p in parts[1:]
    )
    return text if ok else None


def _clean_canary(c: CanaryReading | None) -> CanaryReading | None:
    """The reading's numbers, a kernel name the canary writes, plain device-state words."""
    if c is None or not CANARY_RE.fullmatch(c.name):
        return None
    state = {
        k: v
        for k, v in c.device_state.items()
        if STATE_KEY_RE.fullmatch(k) and STATE_VALUE_RE.fullmatch(v)
    }
    return dataclasses.replace(c, device_state=state)


def _clean_ops(w: WorkloadProfile) -> WorkloadProfile:
    ops = tuple(
        o if o.roofline_bound == known_bound(o.roofline_bound)
        else dataclasses.replace(o, roofline_bound=None)
        for o in w.ops
    )
    return dataclasses.replace(
        w, warnings=(), trace_files=(), canary=_clean_canary(w.canary), ops=ops
    )


def sanitize(history: History) -> History:
    """``history`` with every free-text field the run could choose withheld or checked.

    Raises:
        CorruptResultsError: the results hold no machine or more than one (a PR run
            measures base and head on one runner).
    """
    machines = {s.machine for s in history.series}
    if len(machines) != 1:
        raise CorruptResultsError(
            f"the artifact's results hold {len(machines)} machines; a PR run has exactly one"
        )
    (raw,) = machines
    name = raw if MACHINE_RE.fullmatch(raw) else UNNAMED_MACHINE
    series = tuple(
        Series(
            machine=name,
            env_name=s.env_name,
            series=s.series,
            unit=known_unit(s.unit),
            points=s.points,
        )
        for s in history.series
    )
    fingerprints = {
        (name, c): _clean_fingerprint(fp)
        for (m, c), fp in history.fingerprints.items()
        if m == raw
    }
    profiles = {
        (name, c): tuple(_clean_ops(w) for w in ws)
        for (m, c), ws in history.profiles.items()
        if m == raw
    }
    n = len(history.load_errors)
    errors = (
        (
            f"{n} file{'s' if n != 1 else ''} in the artifact's results could not be read"
            " (names and reasons are withheld here: they come from the untrusted run; the"
            " benchmark job's log has them)",
        )
        if n
        else ()
    )
    return History(
        series=series,
        commits=history.commits,
        fingerprints=fingerprints,
        load_errors=errors,
        profiles=profiles,
        asv_identity={(name, c): v for (m, c), v in history.asv_identity.items() if m == raw},
        unreadable_sidecars={  # the reason names files of the untrusted run: withheld
            (name, c): "a sidecar in the artifact's results could not be read"
            for (m, c) in history.unreadable_sidecars
            if m == raw
        },
        run_states={(name, c): v for (m, c), v in history.run_states.items() if m == raw},
    )


def recompute(
    history: History,
    *,
    base: str,
    head: str,
    rounds: RoundsDocument | None = None,
    acks: Iterable[Acknowledgement] = (),
    floors: Mapping[FloorKey, NoiseFloor] | None = None,
    created: str = "",
) -> FindingsDocument:
    """Verdicts for ``base`` vs ``head`` from an untrusted results folder (and rounds).

    Mirrors what ``ci/pr-bench.sh`` runs (``compare`` with the default settings, then
    ``confirm`` including noisy suspects), on numbers only.

    Args:
        history: the artifact's asv results folder as ``load_history`` read it
            (sanitized here: see :func:`sanitize`).
        base, head: full commit hashes (checked by the caller against trusted sources).
        rounds: the artifact's rounds document; None or not covering every suspect means
            no confirmation (single-run verdicts, and the settings say why).
        acks: acknowledgements from trusted code (the default branch), not from the PR.
        floors: noise floors for the confirmation's prior (trusted history), if any.
        created: timestamp to record.

    Raises:
        CorruptResultsError: no usable results, or rounds about other commits.
        IncomparableError, UsageError: as :func:`compare` (unknown identity, no results
            for a commit).
    """
    history = sanitize(history)
    for what, commit in (("base", base), ("head", head)):
        if commit not in history.commits:
            raise CorruptResultsError(
                f"the artifact's results hold no results for the {what} commit {commit[:12]}"
            )
    doc = compare(history, base, head, acks=acks, created=created)
    todo = suspects(doc, include_noisy=True)
    if not todo:
        return doc
    note = ""
    if rounds is None:
        note = "not run: the artifact holds no rounds document"
    elif (rounds.base, rounds.head) != (base, head):
        raise CorruptResultsError("the artifact's rounds document is about other commits")
    else:
        missing = missing_rounds(rounds, [f.series for f in todo])
        if missing:
            note = (
                f"not replayed: the artifact's rounds lack {len(missing)} of the"
                f" {len(todo)} suspects in some round; single-run verdicts stand"
            )
    if note:
        return dataclasses.replace(doc, settings={**doc.settings, "confirm": note})
    assert rounds is not None
    return confirm(
        doc,
        ReplayRunner(rounds),
        rounds=rounds.rounds,
        max_rounds=rounds.design_max,
        include_noisy=True,
        floors=floors,
    )
