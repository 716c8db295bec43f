"""visionkit: small ConvNeXt and ViT image models (a bench adopter of neuronasv)."""

from visionkit.convnext import ConvNeXt
from visionkit.vit import ViT

__all__ = ["ConvNeXt", "ViT"]
