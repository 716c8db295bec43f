"""A python -c preamble that makes ``import torch`` fail, as on the hosted runners
(ci/install-light.sh installs neuronasv without torch)."""

BLOCK_TORCH = """
import importlib.abc, runpy, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"torch is not installed here ({name})")
        return None
sys.meta_path.insert(0, Block())
"""
