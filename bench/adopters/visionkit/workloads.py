"""visionkit's workloads for neuronasv: the models' parts, whole forwards, training steps.

Each at its default shape; the suite (``benchmarks/devtime.py``) measures them in float32
and bfloat16."""

import torch
import torch.nn.functional as F

from neuronasv.measure.modules import instrument
from neuronasv.measure.workloads import Workload, register
from visionkit import convnext, vit
from visionkit.convnext import ConvNeXt
from visionkit.vit import ViT

DIM = 128


def _module(make):
    def build(shape, dtype, device, seed):
        torch.manual_seed(seed)
        module = make().to(device=device, dtype=dtype).eval()
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)

        def step():
            with torch.no_grad(), instrument(module, "m"):
                return module(x)

        return step

    return build


def _train(make):
    def build(shape, dtype, device, seed):
        torch.manual_seed(seed)
        model = make().to(device=device, dtype=dtype).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        gen = torch.Generator().manual_seed(seed)
        images = torch.randn(shape, generator=gen).to(dtype=dtype, device=device)
        labels = torch.randint(0, 100, shape[:1], generator=gen).to(device)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.enable_grad():  # neuronasv profiles steps under no_grad
                with instrument(model, "model"):
                    loss = F.cross_entropy(model(images).float(), labels)
                loss.backward()
            opt.step()
            return loss

        return step

    return build


for name, what, shape, dtype, build in [
    ("visionkit.convnext", "ConvNeXt forward", "2x3x64x64", "float32", _module(ConvNeXt)),
    ("visionkit.convnext_block", "ConvNeXt block: 7x7 depthwise, LN, GELU MLP", "2x64x16x16",
     "float32", _module(lambda: convnext.Block(64))),
    ("visionkit.convnext_stage", "ConvNeXt stage: downsampling conv, two blocks", "2x32x32x32",
     "float32", _module(lambda: torch.nn.Sequential(convnext.Downsample(32, 64),
                                                    convnext.Block(64), convnext.Block(64)))),
    ("visionkit.convnext_train", "ConvNeXt training step: loss, backward, AdamW", "2x3x64x64",
     "float32", _train(ConvNeXt)),
    ("visionkit.vit", "ViT forward", "2x3x64x64", "float32", _module(ViT)),
    ("visionkit.vit_patch", "ViT patch embedding", "2x3x64x64", "float32",
     _module(lambda: vit.PatchEmbed(8, DIM))),
    ("visionkit.vit_attention", "ViT multi-head attention", f"2x65x{DIM}", "float32",
     _module(lambda: vit.Attention(DIM, 4))),
    ("visionkit.vit_mlp", "ViT GELU MLP", f"2x65x{DIM}", "float32",
     _module(lambda: vit.Mlp(DIM, 4 * DIM))),
    ("visionkit.vit_block", "ViT block: attention, GELU MLP", f"2x65x{DIM}", "float32",
     _module(lambda: vit.Block(DIM, 4))),
    ("visionkit.vit_train", "ViT training step: loss, backward, AdamW", "2x3x64x64", "float32",
     _train(ViT)),
]:
    register(Workload(name, what, shape, build, default_dtype=dtype))
