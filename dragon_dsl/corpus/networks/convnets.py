"""Convolutional classifiers of the zoo, written in torch at their published widths: ResNet (basic and
bottleneck blocks, wide and grouped variants), VGG, MobileNet v2 and v3, EfficientNet.

Every stage keeps its first block (the one that changes stride or width) and at most one repeat (same
shapes as the rest of the stage), so the tasks are the full network's with fewer repetitions. Each
builder returns a torch module; `build` makes one on the meta device in a variant's dtype.
"""

from __future__ import annotations

import torch
from torch import nn


def build(network, variant):
    """(module, example args) of a `conv` network in a variant, on the meta device."""
    from dragon_dsl.corpus.networks import vision_blocks
    from dragon_dsl.corpus.networks.registry import NetworkError

    spec = network.config
    function = globals().get(spec["function"]) or getattr(vision_blocks, spec["function"], None)
    if function is None:
        raise NetworkError(f"{network.name}: no network builder {spec['function']!r}")
    dtype = getattr(torch, variant.torch_dtype)
    with torch.device("meta"):
        model = function(**spec["args"]).to(dtype).eval()
        args = (
            model.example_inputs(variant.batch, variant.image, dtype)
            if hasattr(model, "example_inputs")
            else (torch.zeros((variant.batch, 3, variant.image, variant.image), dtype=dtype),)
        )
    return model, args


def conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride=1, groups=1, width=64):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, planes, 3, stride), conv_bn(planes, planes, 3, act=None))
        self.down = conv_bn(cin, planes, 1, stride, act=None) if stride != 1 or cin != planes else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.down(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride=1, groups=1, width=64):
        super().__init__()
        mid = int(planes * (width / 64.0)) * groups
        out = planes * self.expansion
        self.body = nn.Sequential(
            conv_bn(cin, mid, 1), conv_bn(mid, mid, 3, stride, groups), conv_bn(mid, out, 1, act=None)
        )
        self.down = conv_bn(cin, out, 1, stride, act=None) if stride != 1 or cin != out else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.down(x))


def resnet(block="basic", layers=(2, 2, 2, 2), width=64, groups=1, stem=64, classes=1000):
    """ResNet (torchvision's layout): a 7x7 stem, stages of 64, 128, 256, 512 planes (times `stem`/64)."""
    cls = BasicBlock if block == "basic" else Bottleneck
    mods, cin = [conv_bn(3, stem, 7, 2), nn.MaxPool2d(3, 2, 1)], stem
    for i, n in enumerate(layers):
        planes = stem * 2**i
        for j in range(n):
            mods.append(cls(cin, planes, 2 if j == 0 and i > 0 else 1, groups, width))
            cin = planes * cls.expansion
    return nn.Sequential(*mods, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))


def vgg(stages=(64, 128, 256, 512, 512), classes=1000):
    """VGG: two 3x3 convolutions per stage (the first changes the width), max pooling, three dense layers."""
    mods, cin = [], 3
    for c in stages:
        mods += [nn.Conv2d(cin, c, 3, 1, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2)]
        cin = c
    head = [
        nn.AdaptiveAvgPool2d(7),
        nn.Flatten(),
        nn.Linear(cin * 49, 4096),
        nn.ReLU(),
        nn.Linear(4096, 4096),
        nn.ReLU(),
        nn.Linear(4096, classes),
    ]
    return nn.Sequential(*mods, *head)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeeze, act=nn.ReLU, gate=nn.Sigmoid):
        super().__init__()
        self.fc = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Conv2d(channels, squeeze, 1), act(), nn.Conv2d(squeeze, channels, 1), gate()
        )

    def forward(self, x):
        return x * self.fc(x)


class InvertedResidual(nn.Module):
    """MobileNet's and EfficientNet's block: expand (1x1), depthwise kxk, squeeze-excite, project (1x1)."""

    def __init__(self, cin, cout, k, stride, expand, act=nn.ReLU6, se=0, se_act=nn.ReLU, se_gate=nn.Sigmoid):
        super().__init__()
        mid = cin * expand if isinstance(expand, int) else expand[0]
        layers = [conv_bn(cin, mid, 1, act=act)] if mid != cin else []
        layers.append(conv_bn(mid, mid, k, stride, groups=mid, act=act))
        if se:
            layers.append(SqueezeExcite(mid, se, se_act, se_gate))
        layers.append(conv_bn(mid, cout, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def mobilenet_v2(classes=1000):
    """MobileNet v2 (expansion t, channels c, repeats n, stride s), each stage at most two blocks."""
    table = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    mods, cin = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
    for t, c, n, s in table:
        for j in range(min(n, 2)):
            mods.append(InvertedResidual(cin, c, 3, s if j == 0 else 1, t))
            cin = c
    return nn.Sequential(
        *mods, conv_bn(cin, 1280, 1, act=nn.ReLU6), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, classes)
    )


_V3 = {  # kernel, expanded, out, squeeze-excite, hardswish, stride
    "large": (
        [
            (3, 16, 16, 0, 0, 1),
            (3, 64, 24, 0, 0, 2),
            (3, 72, 24, 0, 0, 1),
            (5, 72, 40, 1, 0, 2),
            (5, 120, 40, 1, 0, 1),
            (3, 240, 80, 0, 1, 2),
            (3, 200, 80, 0, 1, 1),
            (3, 184, 80, 0, 1, 1),
            (3, 480, 112, 1, 1, 1),
            (3, 672, 112, 1, 1, 1),
            (5, 672, 160, 1, 1, 2),
            (5, 960, 160, 1, 1, 1),
        ],
        960,
        1280,
    ),
    "small": (
        [
            (3, 16, 16, 1, 0, 2),
            (3, 72, 24, 0, 0, 2),
            (3, 88, 24, 0, 0, 1),
            (5, 96, 40, 1, 1, 2),
            (5, 240, 40, 1, 1, 1),
            (5, 120, 48, 1, 1, 1),
            (5, 144, 48, 1, 1, 1),
            (5, 288, 96, 1, 1, 2),
            (5, 576, 96, 1, 1, 1),
        ],
        576,
        1024,
    ),
}


def _divisible(value, by=8):
    return max(by, int(value + by / 2) // by * by)


def mobilenet_v3(size="large", classes=1000):
    """MobileNet v3 large or small: hardswish, hard-sigmoid squeeze-excite at a quarter of the width."""
    table, last, hidden = _V3[size]
    mods, cin = [conv_bn(3, 16, 3, 2, act=nn.Hardswish)], 16
    for k, mid, out, se, hs, stride in table:
        act = nn.Hardswish if hs else nn.ReLU
        mods.append(
            InvertedResidual(
                cin, out, k, stride, (mid,), act, _divisible(mid // 4) if se else 0, nn.ReLU, nn.Hardsigmoid
            )
        )
        cin = out
    return nn.Sequential(
        *mods,
        conv_bn(cin, last, 1, act=nn.Hardswish),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(last, hidden),
        nn.Hardswish(),
        nn.Linear(hidden, classes),
    )


def efficientnet(width=1.0, depth=1.0, classes=1000):
    """EfficientNet (b0's stages scaled by `width`): MBConv blocks with SiLU and squeeze-excite."""
    table = [
        (1, 3, 1, 32, 16, 1),
        (6, 3, 2, 16, 24, 2),
        (6, 5, 2, 24, 40, 2),
        (6, 3, 2, 40, 80, 3),
        (6, 5, 1, 80, 112, 3),
        (6, 5, 2, 112, 192, 4),
        (6, 3, 1, 192, 320, 1),
    ]
    stem = _divisible(32 * width)
    mods, cin = [conv_bn(3, stem, 3, 2, act=nn.SiLU)], stem
    for expand, k, stride, _, c_out, n in table:
        out = _divisible(c_out * width)
        for j in range(min(int(n * depth + 0.999), 2)):
            se = max(1, int(cin * 0.25))  # a quarter of the block's input width
            mods.append(InvertedResidual(cin, out, k, stride if j == 0 else 1, expand, nn.SiLU, se, nn.SiLU))
            cin = out
    head = _divisible(1280 * width)
    return nn.Sequential(
        *mods, conv_bn(cin, head, 1, act=nn.SiLU), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(head, classes)
    )
