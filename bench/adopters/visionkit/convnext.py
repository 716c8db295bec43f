"""A ConvNeXt: depthwise 7x7 convolutions, LayerNorm, a pointwise MLP with GELU, layer
scale, and strided convolutions between the stages."""

import torch
import torch.nn.functional as F
from torch import nn


class LayerNorm2d(nn.Module):
    """LayerNorm over the channels of an NCHW tensor."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, dim, scale=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(scale * torch.ones(dim))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class Downsample(nn.Module):
    def __init__(self, dim, out):
        super().__init__()
        self.norm = LayerNorm2d(dim)
        self.conv = nn.Conv2d(dim, out, kernel_size=2, stride=2)

    def forward(self, x):
        return self.conv(self.norm(x))


class ConvNeXt(nn.Module):
    def __init__(self, dims=(32, 64, 128), depths=(2, 2, 2), classes=100):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], kernel_size=4, stride=4),
                                  LayerNorm2d(dims[0]))
        self.stages = nn.ModuleList()
        for i, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
            layers = [Downsample(dims[i - 1], dim)] if i else []
            layers += [Block(dim) for _ in range(depth)]
            self.stages.append(nn.Sequential(*layers))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return self.head(self.norm(x.mean((-2, -1))))
