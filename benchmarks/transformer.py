"""LLaMA-style decoder-block workloads (``neuronasv.measure.workloads.transformer``).

Series: ``transformer.<Workload>.devtime_total(shape, dtype)`` and
``transformer.<Workload>.devtime_op(shape, dtype, op)`` (``transformer.block.backward`` ->
``transformer.BlockBackward``); see ``neuronasv/suite/build.py``.

Shapes and dtypes come from the workload module's presets: on the CPU the ``cpu`` preset
(1x128x256x4) in float32 only — bfloat16 matmul on CPUs without AVX512-BF16/AMX is a slow
fallback (~60x float32 here) that would dominate the suite's wall time and measure the
fallback, not the model; on CUDA / Neuron the ``accelerator`` preset is added (hidden
4096/8192, sequence up to 8192) in bfloat16. ``NEURONASV_SHAPES`` / ``NEURONASV_DTYPES`` /
``NEURONASV_LARGE`` override as for every family.
"""

from __future__ import annotations

from neuronasv.measure.backends import is_accelerator
from neuronasv.measure.workloads.transformer import ACCELERATOR_PRESET, CPU_PRESET, preset_for
from neuronasv.suite import build_suite
from neuronasv.suite.build import import_backend_name

globals().update(
    build_suite(
        "transformer",
        module=__name__,
        cpu_shapes=CPU_PRESET.shapes,
        accelerator_shapes=ACCELERATOR_PRESET.shapes,
        dtypes=(preset_for(is_accelerator(import_backend_name())).dtype,),
    )
)
