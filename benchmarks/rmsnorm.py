"""The three RMSNorm variants (naive ATen ops, fused ``torch.rms_norm``, ``torch.compile``).

Series: ``rmsnorm.<Variant>.devtime_total(shape, dtype)`` and
``rmsnorm.<Variant>.devtime_op(shape, dtype, op)``; see ``neuronasv/suite/build.py``.
Shapes: the seed's ``4x512`` plus two transformer-like ``batch x seq x hidden`` shapes small
enough for a quick CPU run; accelerators add the large ones.
"""

from __future__ import annotations

from neuronasv.suite import build_suite

globals().update(
    build_suite(
        "rmsnorm",
        module=__name__,
        cpu_shapes=("4x512", "4x64x256", "2x128x512"),
        accelerator_shapes=("8x1024x4096", "4x2048x8192"),
    )
)
