"""Regenerate the asv-format fixtures in this folder (written with asv's own Results class).

    .venv/bin/python tests/data/analyse/make_fixtures.py

``pr/``: one machine, base and head of a PR run as ``neuronasv run`` stores them (sidecars
with op tables); head makes ``aten::mul`` of rmsnorm.naive 4x512 bf16 ~20 % slower.
``plain/``: plain asv results of another suite (``time_`` benchmarks, no sidecars), with a
failed benchmark, a skipped (NaN) combination, a truncated file and a future-version file.
Deterministic (seeded).
"""

from __future__ import annotations

import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "analyse"))

from analyse_asvdata import Bench, neuronasv_run, write_run  # noqa: E402

BASE = "1a2b3c4d" + "0" * 32
HEAD = "5e6f7a8b" + "1" * 32
FP = {"backend": "cpu", "device_model": "cpu", "torch": "2.13.0", "python": "3.11.9"}


def tables(rng: np.random.Generator, mul: float) -> dict:
    def s(mu: float, sd: float, n: int = 20) -> list[float]:
        return [round(float(x), 3) for x in rng.normal(mu, sd, n)]

    return {
        ("rmsnorm.naive", "4x512", "bfloat16"): {
            "aten::mul": (3.0, s(140.0 * mul, 4.0)),
            "aten::mean": (1.0, s(60.0, 2.0)),
            "aten::add": (1.0, s(25.0, 1.0)),
            "aten::rsqrt": (1.0, s(20.0, 1.0)),
        },
        ("rmsnorm.fused", "4x512", "bfloat16"): {
            "aten::_fused_rms_norm": (1.0, s(90.0, 3.0)),
            "aten::pow": (1.0, s(30.0, 1.0)),
        },
    }


def main() -> None:
    for sub in ("pr", "plain"):
        shutil.rmtree(os.path.join(HERE, sub), ignore_errors=True)
    rng = np.random.default_rng(20260101)
    pr = os.path.join(HERE, "pr")
    neuronasv_run(pr, "ci-cpu-1", BASE, 1767225600000, tables(rng, 1.0), fingerprint=FP)
    neuronasv_run(pr, "ci-cpu-1", HEAD, 1767229200000, tables(rng, 1.2), fingerprint=FP)

    plain = os.path.join(HERE, "plain")
    for i, c in enumerate(("aaaa1111" + "2" * 32, "bbbb2222" + "3" * 32)):
        shift = 1.0 if i == 0 else 1.5
        write_run(
            plain,
            "laptop",
            c,
            1767225600000 + i * 3600_000,
            [
                Bench(
                    "suite.TimeSort.time_sort",
                    [["10", "100"]],
                    [
                        [round(float(x), 9) for x in rng.normal(1e-5, 1e-7, 10)],
                        [round(float(x), 9) for x in rng.normal(2e-4 * shift, 2e-6, 10)],
                    ],
                ),
                Bench("suite.time_broken", [], [None]),
                Bench("suite.TimeIO.time_read", [["'a'", "'b'"]], [[1e-3] * 5, float("nan")]),
            ],
            env_name="conda-py3.11",
        )
    # A truncated file and one from a future asv, next to good ones.
    good = os.path.join(plain, "laptop", "aaaa1111-conda-py3.11.json")
    with open(good, encoding="utf-8") as fh:
        text = fh.read()
    with open(os.path.join(plain, "laptop", "cccc3333-conda-py3.11.json"), "w") as fh:
        fh.write(text[: len(text) // 2])
    with open(os.path.join(plain, "laptop", "dddd4444-conda-py3.11.json"), "w") as fh:
        fh.write(text.replace('"version": 2', '"version": 3'))


if __name__ == "__main__":
    main()
