"""Stand-in TorchNeuron (tests only): device ``neuron`` on a simulated NeuronCore
(:mod:`._device`) and the documented profiling API (:mod:`.profiling`). Put
tests/neuron/site on ``PYTHONPATH`` of a subprocess (tests/neuron/standin.py); never import
it in the test process (PrivateUse1 can be renamed once per process)."""

from torch_neuronx import _device

__version__ = "0.1.0+standin"

_device.install()
