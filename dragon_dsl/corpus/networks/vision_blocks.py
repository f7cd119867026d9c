"""Convolutional networks of the zoo beyond plain classifiers, written in torch: ConvNeXt, Stable
Diffusion's denoising UNet (residual blocks with a timestep embedding, self- and cross-attention
transformers, skip connections) and the classic segmentation UNet.

As in `convnets.py`, every repeated stage keeps at most two blocks.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor (ConvNeXt's downsampling layers)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        return x + (self.gamma * self.mlp(self.norm(y))).permute(0, 3, 1, 2)


def convnext(dims=(96, 192, 384, 768), classes=1000):
    """ConvNeXt: a 4x4 patchify stem, stages of depthwise 7x7 + inverted MLP blocks, LN + 2x2 downsampling."""
    mods = [nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6)]
    for i, dim in enumerate(dims):
        if i:
            mods += [LayerNorm2d(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], dim, 2, 2)]
        mods += [ConvNeXtBlock(dim), ConvNeXtBlock(dim)]
    head = [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(dims[-1], eps=1e-6), nn.Linear(dims[-1], classes)]
    return nn.Sequential(*mods, *head)


class ResBlock(nn.Module):
    """Stable Diffusion's residual block: GroupNorm, SiLU, 3x3 conv, plus the projected timestep embedding."""

    def __init__(self, cin, cout, temb=1280):
        super().__init__()
        self.in_layers = nn.Sequential(nn.GroupNorm(32, cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1))
        self.emb = nn.Sequential(nn.SiLU(), nn.Linear(temb, cout))
        self.out_layers = nn.Sequential(nn.GroupNorm(32, cout), nn.SiLU(), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.in_layers(x) + self.emb(emb)[:, :, None, None]
        return self.skip(x) + self.out_layers(h)


class SpatialTransformer(nn.Module):
    """Self-attention, cross-attention on the text context, and a GEGLU feed-forward over pixels."""

    def __init__(self, channels, context=768, heads=8):
        super().__init__()
        self.norm = nn.GroupNorm(32, channels, eps=1e-6)
        self.proj_in, self.proj_out = nn.Linear(channels, channels), nn.Linear(channels, channels)
        self.norms = nn.ModuleList(nn.LayerNorm(channels) for _ in range(3))
        self.attn1 = nn.MultiheadAttention(channels, heads, batch_first=True, bias=False)
        self.attn2 = nn.MultiheadAttention(channels, heads, kdim=context, vdim=context, batch_first=True, bias=False)
        self.ff_in, self.ff_out = nn.Linear(channels, channels * 8), nn.Linear(channels * 4, channels)

    def forward(self, x, context):
        b, c, h, w = x.shape
        y = self.proj_in(self.norm(x).permute(0, 2, 3, 1).reshape(b, h * w, c))
        n = self.norms[0](y)
        y = y + self.attn1(n, n, n, need_weights=False)[0]
        y = y + self.attn2(self.norms[1](y), context, context, need_weights=False)[0]
        a, gate = self.ff_in(self.norms[2](y)).chunk(2, dim=-1)
        y = y + self.ff_out(a * nn.functional.gelu(gate))
        return x + self.proj_out(y).reshape(b, h, w, c).permute(0, 3, 1, 2)


class UNetSD(nn.Module):
    """Stable Diffusion 1.x's denoising UNet at its widths (320, 640, 1280), one block per level."""

    def __init__(self, channels=(320, 640, 1280), context=768):
        super().__init__()
        c0 = channels[0]
        self.time = nn.Sequential(nn.Linear(c0, 4 * c0), nn.SiLU(), nn.Linear(4 * c0, 4 * c0))
        self.conv_in = nn.Conv2d(4, c0, 3, padding=1)
        self.down, self.downsample, cin, skips = nn.ModuleList(), nn.ModuleList(), c0, [c0]
        for i, c in enumerate(channels):
            self.down.append(nn.ModuleList([ResBlock(cin, c, 4 * c0), SpatialTransformer(c, context)]))
            last = i == len(channels) - 1
            self.downsample.append(nn.Identity() if last else nn.Conv2d(c, c, 3, 2, 1))
            cin = c
            skips.append(c)
        self.mid = nn.ModuleList(
            [ResBlock(cin, cin, 4 * c0), SpatialTransformer(cin, context), ResBlock(cin, cin, 4 * c0)]
        )
        self.up, self.upsample = nn.ModuleList(), nn.ModuleList()
        for i, c in enumerate(reversed(channels)):
            self.up.append(nn.ModuleList([ResBlock(cin + skips.pop(), c, 4 * c0), SpatialTransformer(c, context)]))
            self.upsample.append(nn.Conv2d(c, c, 3, padding=1) if i < len(channels) - 1 else nn.Identity())
            cin = c
        self.out = nn.Sequential(nn.GroupNorm(32, cin), nn.SiLU(), nn.Conv2d(cin, 4, 3, padding=1))
        self.c0, self.context = c0, context

    def example_inputs(self, batch, side, dtype):
        return (
            torch.zeros((batch, 4, side, side), dtype=dtype),
            torch.zeros((batch,), dtype=dtype),
            torch.zeros((batch, 77, self.context), dtype=dtype),
        )

    def forward(self, x, t, context):
        half = self.c0 // 2
        freqs = torch.exp(torch.arange(half, dtype=torch.float32, device=x.device) * (-math.log(10000.0) / half)).to(
            x.dtype
        )
        emb = self.time(torch.cat([torch.cos(t[:, None] * freqs), torch.sin(t[:, None] * freqs)], dim=-1))
        h = self.conv_in(x)
        skips = [h]
        for (res, attn), down in zip(self.down, self.downsample):
            h = attn(res(h, emb), context)
            skips.append(h)
            h = down(h)
        h = self.mid[2](self.mid[1](self.mid[0](h, emb), context), emb)
        for (res, attn), up in zip(self.up, self.upsample):
            h = attn(res(torch.cat([h, skips.pop()], dim=1), emb), context)
            if not isinstance(up, nn.Identity):
                h = up(nn.functional.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.out(h)


def unet_sd(channels=(320, 640, 1280)):
    return UNetSD(channels)


def _double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    )


class UNet2D(nn.Module):
    """The segmentation UNet (Ronneberger et al.): double 3x3 convolutions, max pooling, transposed
    convolutions up, skip connections by concatenation."""

    def __init__(self, channels=(64, 128, 256, 512, 1024), classes=2):
        super().__init__()
        self.down = nn.ModuleList(_double_conv(cin, c) for cin, c in zip((3, *channels[:-1]), channels))
        rev = list(reversed(channels))
        self.up = nn.ModuleList(nn.ConvTranspose2d(c, c // 2, 2, 2) for c in rev[:-1])
        self.dec = nn.ModuleList(_double_conv(c, c // 2) for c in rev[:-1])
        self.head = nn.Conv2d(channels[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else nn.functional.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([skips.pop(), up(x)], dim=1))
        return self.head(x)


def unet_2d(channels=(64, 128, 256, 512, 1024)):
    return UNet2D(channels)
