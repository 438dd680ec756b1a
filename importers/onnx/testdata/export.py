"""Exports the PyTorch test models of importers/onnx (run with PyTorch and onnx).

    python3 export.py OUTDIR [small] [cnns] [resnet18] [torchvision] [timm]   (DYNAMO=1: the dynamo exporter)

writes NAME.onnx, NAME.in.npy (the input) and NAME.out.npy (PyTorch's output)
for each model. Weights are random (seeded); the models are in eval mode.
"cnns" are small torchvision-style CNNs (ResNet basic and bottleneck
blocks, MobileNetV2/V3, squeeze-excite, Inception/DenseNet concatenation,
ShuffleNet's channel shuffle, ConvNeXt, every pooling variant, every
padding mode, a U-Net-like decoder with upsampling and group/instance
norms) at small widths. Both exporters of PyTorch 2.11 fold an eval-mode
BatchNormalization that follows a Conv into it; the pre-activation ones
(DenseNet's) and BatchNorm1d stay. The dynamo exporter writes opset 18
(it cannot convert these models down to 17), the TorchScript one 17.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
kw = {}
if "dynamo" in torch.onnx.export.__code__.co_varnames:
    kw["dynamo"] = os.environ.get("DYNAMO", "0") == "1"
# UNFUSED=1 keeps eval-mode batch norms as BatchNormalization nodes (both
# exporters fold one that follows a Conv otherwise): the TorchScript
# exporter without its eval peephole (training=PRESERVE on an eval model),
# the dynamo one without its optimizer. Names get "_unfused"; CNNS=a,b
# picks models of "cnns".
UNFUSED = os.environ.get("UNFUSED", "0") == "1"
if UNFUSED:
    names = torch.onnx.export.__code__.co_varnames
    if kw.get("dynamo") and "optimize" in names:
        kw["optimize"] = False
    elif not kw.get("dynamo") and "training" in names:
        kw["training"] = torch.onnx.TrainingMode.PRESERVE
PICK = [n for n in os.environ.get("CNNS", "").split(",") if n]
# DYNHW=1 also makes the height and width of an image input dynamic (names
# get "_dynhw"; the second input is 4 larger in each).
DYNHW = os.environ.get("DYNHW", "0") == "1"


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
        self.b2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.avg = nn.AvgPool2d(2, ceil_mode=True)
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        x = torch.relu(self.b1(self.c1(x)))
        x = self.pool(torch.relu(self.b2(self.c2(x))))
        x = self.avg(x)
        return self.fc(torch.flatten(x, 1))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


class GPTBlock(nn.Module):
    """Token and position embeddings, a causal attention layer written as
    GPT-2 writes it (split heads, masked_fill with a tril buffer sliced to
    the length), a tanh-GELU projection."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(32)
        self.qkv = nn.Linear(32, 96)
        self.proj = nn.Linear(32, 32)
        self.emb = nn.Embedding(50, 32)
        self.pos = nn.Embedding(16, 32)
        self.register_buffer("mask", torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))

    def forward(self, ids):
        B, T = ids.shape
        h = self.emb(ids) + self.pos(torch.arange(T))
        q, k, v = self.qkv(self.ln(h)).split(32, dim=2)
        q, k, v = (t.view(B, T, 4, 8).transpose(1, 2) for t in (q, k, v))
        a = (q @ k.transpose(-2, -1)) * (1.0 / 8 ** 0.5)
        a = a.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = (torch.softmax(a, -1) @ v).transpose(1, 2).contiguous().view(B, T, 32)
        return h + nn.functional.gelu(self.proj(y), approximate="tanh")


def randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.5, 0.5)
        if isinstance(mod, nn.LayerNorm) and mod.weight is not None and mod.bias is not None:  # not the identity map
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.5, 0.5)


def export(name, model, x, dynamic_batch, opset=17):
    model.eval()
    randomize_bn(model)
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out, name + ".onnx")
    dyn = {"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None
    hw = DYNHW and x.dim() == 4
    if hw:
        dyn["input"].update({2: "height", 3: "width"})
    torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                      dynamic_axes=dyn, opset_version=opset, **kw)
    np.save(os.path.join(out, name + ".in.npy"), x.numpy())
    np.save(os.path.join(out, name + ".out.npy"), y.numpy())
    if dynamic_batch:  # a second batch size (and image size) for the same file
        shape = list(x.shape[1:])
        if hw:
            shape[1], shape[2] = shape[1] + 4, shape[2] + 4
        x2 = torch.randn(5, *shape) if x.is_floating_point() else torch.randint(0, 50, (5, *shape))
        with torch.no_grad():
            y2 = model(x2)
        np.save(os.path.join(out, name + ".in2.npy"), x2.numpy())
        np.save(os.path.join(out, name + ".out2.npy"), y2.numpy())
    print(name, os.path.getsize(path), "bytes", ort_diff(path, x, y))


def ort_diff(path, x, y):
    """ONNX Runtime's largest difference from PyTorch on the file, to tell
    an exporter's fault from an importer's."""
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
        return "ort max|diff| %.3g" % float(np.abs(got - y.numpy()).max())
    except Exception as e:
        return "ort: %s %s" % (type(e).__name__, str(e)[:200])


def attempt(*args, **kwargs):
    if PICK and args[0] not in PICK:
        return
    if UNFUSED:
        args = (args[0] + "_unfused",) + args[1:]
    if DYNHW:
        args = (args[0] + "_dynhw",) + args[1:]
    try:
        export(*args, **kwargs)
    except Exception as e:  # one failed export must not stop the others
        msg = str(e)
        cause = e.__cause__ or e.__context__  # the exporter's own reason, under its advice
        while cause is not None and (cause.__cause__ or cause.__context__) is not None:
            cause = cause.__cause__ or cause.__context__
        print(args[0], "FAILED:", type(e).__name__, msg[:200], "... cause:", type(cause).__name__ if cause else "-",
              str(cause)[:400] if cause else msg[-400:])


def conv_bn(cin, cout, k, stride=1, groups=1, dilation=1, act=nn.ReLU):
    """Conv (no bias) → BatchNorm → act, torchvision's Conv2dNormActivation."""
    layers = [nn.Conv2d(cin, cout, k, stride, dilation * (k - 1) // 2, dilation, groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class BasicBlock(nn.Module):
    """ResNet-18/34's block; a stride-2 or widening block adds the 1×1
    conv + BN downsample on the shortcut."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + idt)


class Bottleneck(nn.Module):
    """ResNet-50's block (torchvision's v1.5: the stride on the 3×3);
    dilation as replace_stride_with_dilation sets it."""

    def __init__(self, cin, width, stride=1, dilation=1):
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, dilation, dilation, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + idt)


class ResNetBasic(nn.Module):
    """ResNet-18's layout at width 8: 7×7/2 stem, 3×3/2 max pool, basic
    blocks, adaptive average pool, flatten, fc."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8), BasicBlock(8, 16, 2), BasicBlock(16, 16))
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


class ResNetBottleneck(nn.Module):
    """ResNet-50's layout at width 4 on an odd input size: bottlenecks
    with downsample, one dilated stage, the old view(N, -1) flatten."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(Bottleneck(8, 4), Bottleneck(16, 4), Bottleneck(16, 8, 2), Bottleneck(32, 8, 1, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(self.layers(self.stem(x)))
        return self.fc(x.view(x.size(0), -1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1×1 expand, 3×3 depthwise (groups = C), ReLU6,
    linear 1×1 projection, residual when the shape is kept."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [conv_bn(cin, hidden, 1, act=nn.ReLU6)]
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6), conv_bn(hidden, cout, 1, act=None)]
        self.conv = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 8, 3, 2, act=nn.ReLU6), InvertedResidual(8, 8, 1, 1), InvertedResidual(8, 12, 2, 6),
            InvertedResidual(12, 12, 1, 6), InvertedResidual(12, 16, 2, 6), conv_bn(16, 32, 1, act=nn.ReLU6))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, 10))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class SqueezeExcite(nn.Module):
    """Global average pool, 1×1 reduce, act, 1×1 expand, gate, and the
    broadcast multiply of [N, C, 1, 1] into [N, C, H, W]."""

    def __init__(self, c, r, act, gate):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1, self.act, self.fc2, self.gate = nn.Conv2d(c, r, 1), act(), nn.Conv2d(r, c, 1), gate()

    def forward(self, x):
        return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))


class SENet(nn.Module):
    """EfficientNet's MBConv (SiLU, 5×5/2 depthwise, SE with sigmoid) and
    MobileNetV3's block (Hardswish, SE with ReLU and Hardsigmoid, residual),
    a mean over H, W (ReduceMean) and a Linear → BatchNorm1d → Hardswish head."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 8, 3, 2, act=nn.Hardswish)
        self.mb = nn.Sequential(conv_bn(8, 32, 1, act=nn.SiLU), conv_bn(32, 32, 5, 2, groups=32, act=nn.SiLU),
                                SqueezeExcite(32, 8, nn.SiLU, nn.Sigmoid), conv_bn(32, 16, 1, act=None))
        self.v3 = nn.Sequential(conv_bn(16, 48, 1, act=nn.Hardswish), conv_bn(48, 48, 3, groups=48, act=nn.Hardswish),
                                SqueezeExcite(48, 12, nn.ReLU, nn.Hardsigmoid), conv_bn(48, 16, 1, act=None))
        self.head = nn.Sequential(nn.Linear(16, 24), nn.BatchNorm1d(24), nn.Hardswish(), nn.Linear(24, 10))

    def forward(self, x):
        x = self.mb(self.stem(x))
        x = x + self.v3(x)
        return self.head(x.mean((2, 3)))


class Pools(nn.Module):
    """Every pooling form torchvision models use, on an odd size: max with
    ceil_mode and padding, dilated max, non-square windows, average with
    count_include_pad both ways, ceil-mode average with and without
    padding, adaptive average to 5×5 and 1×1, adaptive max; flattened and
    concatenated."""

    def forward(self, x):
        f = nn.functional
        ys = [f.max_pool2d(x, 3, 3, 1, ceil_mode=True), f.max_pool2d(x, 3, 1, 1, dilation=2),
              f.max_pool2d(x, (3, 2), (2, 1)), f.max_pool2d(x, 2, ceil_mode=True),
              f.avg_pool2d(x, 3, 2, 1, count_include_pad=True), f.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
              f.avg_pool2d(x, 2, ceil_mode=True), f.avg_pool2d(x, 3, 3, 1, ceil_mode=True),
              f.avg_pool2d(x, 3, 3, 1, ceil_mode=True, count_include_pad=False), f.avg_pool2d(x, (1, 3), (1, 2), (0, 1)),
              f.adaptive_avg_pool2d(x, (5, 5)), f.adaptive_avg_pool2d(x, 1), f.adaptive_max_pool2d(x, 1)]
        return torch.cat([y.flatten(1) for y in ys], 1)


class InceptionDense(nn.Module):
    """An Inception block (1×1, 1×1→3×3, 1×1→5×5, 3×3/1 max pool→1×1
    branches concatenated), a DenseNet block (pre-activation BN → ReLU →
    conv layers, each concatenated to its input: the BNs cannot fold into
    a conv) and a transition (BN, ReLU, 1×1 conv, 2×2 average pool)."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, 3)
        self.b1 = conv_bn(16, 8, 1)
        self.b2 = nn.Sequential(conv_bn(16, 6, 1), conv_bn(6, 8, 3))
        self.b3 = nn.Sequential(conv_bn(16, 4, 1), conv_bn(4, 4, 5))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_bn(16, 4, 1))
        self.dense = nn.ModuleList(
            nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, 12, 1, bias=False), nn.BatchNorm2d(12), nn.ReLU(),
                          nn.Conv2d(12, 6, 3, 1, 1, bias=False)) for c in (24, 30, 36))
        self.trans = nn.Sequential(nn.BatchNorm2d(42), nn.ReLU(), nn.Conv2d(42, 16, 1, bias=False), nn.AvgPool2d(2, 2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        x = torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)
        for layer in self.dense:
            x = torch.cat([x, layer(x)], 1)
        x = torch.relu(self.trans(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def channel_shuffle(x, groups):
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    return torch.transpose(x, 1, 2).contiguous().view(n, -1, h, w)


class ShuffleBlock(nn.Module):
    """ShuffleNetV2's unit: chunk the channels in two (Split), a 1×1 →
    depthwise 3×3 → 1×1 branch on one half, concat, channel shuffle
    (view, transpose, view)."""

    def __init__(self, c):
        super().__init__()
        h = c // 2
        self.branch = nn.Sequential(conv_bn(h, h, 1), conv_bn(h, h, 3, groups=h, act=None), conv_bn(h, h, 1))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return channel_shuffle(torch.cat((a, self.branch(b)), 1), 2)


class ShuffleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 16, 3, 2), nn.MaxPool2d(3, 2, 1, ceil_mode=True))
        self.blocks = nn.Sequential(ShuffleBlock(16), ShuffleBlock(16), conv_bn(16, 32, 3, dilation=2))
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(x.mean([2, 3]))


class LayerNorm2d(nn.LayerNorm):
    """ConvNeXt's channel LayerNorm of NCHW: permute, normalize, permute."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt's block: 7×7 depthwise conv, channels-last LayerNorm,
    Linear ×4 (a MatMul of rank 4), exact GELU, Linear, layer scale,
    residual."""

    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.rand(c) + 0.5)

    def forward(self, x):
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.fc2(nn.functional.gelu(self.fc1(y))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    """ConvNeXt's layout: a 4×4/4 patchify stem with LayerNorm2d, blocks,
    a LayerNorm2d + 2×2/2 conv downsample, global average pool, LayerNorm
    head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 4, 4), LayerNorm2d(16, eps=1e-6))
        self.stage1 = nn.Sequential(ConvNeXtBlock(16), ConvNeXtBlock(16))
        self.down = nn.Sequential(LayerNorm2d(16, eps=1e-6), nn.Conv2d(16, 32, 2, 2))
        self.stage2 = ConvNeXtBlock(32)
        self.head = nn.Sequential(nn.LayerNorm(32, eps=1e-6), nn.Linear(32, 10))

    def forward(self, x):
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(x.mean([-2, -1]))


class PaddingModes(nn.Module):
    """Conv2d's padding_mode reflect, replicate and circular, and the
    padding layers (asymmetric reflection, replication, a constant other
    than zero): ONNX Pad's reflect, edge and wrap modes, or what an
    exporter writes for them."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
        self.c2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2, padding_mode="replicate")
        self.c3 = nn.Conv2d(8, 8, 3, padding=1, padding_mode="circular")
        self.pads = nn.Sequential(nn.ReflectionPad2d((1, 2, 0, 3)), nn.ReplicationPad2d(2), nn.ConstantPad2d(1, 0.5))
        self.c4 = nn.Conv2d(8, 4, 3, stride=2)

    def forward(self, x):
        x = torch.relu(self.c3(torch.relu(self.c2(torch.relu(self.c1(x))))))
        return self.c4(self.pads(x)).flatten(1)


class UpsampleNorms(nn.Module):
    """A small U-Net-like decoder: GroupNorm, PReLU, InstanceNorm, ELU,
    nearest ×2 upsampling, Mish, a grouped ConvTranspose2d (stride 2,
    output_padding), bilinear ×2 (align_corners=False), SELU, PixelShuffle,
    bilinear to a size (align_corners=True), CELU, a skip concatenation."""

    def __init__(self):
        super().__init__()
        self.c1, self.gn, self.act1 = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.PReLU(16)
        self.c2, self.inorm = nn.Conv2d(16, 8, 3, stride=2, padding=1), nn.InstanceNorm2d(8, affine=True)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.c3 = nn.Conv2d(24, 8, 3, padding=1)
        self.ct = nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.c4, self.shuffle = nn.Conv2d(8, 8, 1), nn.PixelShuffle(2)

    def forward(self, x):
        f = nn.functional
        s = self.act1(self.gn(self.c1(x)))
        y = f.elu(self.inorm(self.c2(s)))
        y = f.mish(self.c3(torch.cat([self.up1(y), s], 1)))
        y = f.selu(f.interpolate(self.ct(y), scale_factor=2, mode="bilinear", align_corners=False))
        y = f.celu(f.interpolate(self.shuffle(self.c4(y)), size=(13, 9), mode="bilinear", align_corners=True), 1.5)
        return y.flatten(1)


if "small" in sys.argv[2:] or len(sys.argv) == 2:
    attempt("cnn_small", SmallCNN(), torch.randn(2, 3, 16, 16), True)
    attempt("mlp_dynamic", MLP(), torch.randn(3, 32), True, opset=14)
    enc = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    attempt("transformer_encoder", enc, torch.randn(2, 10, 64), False)
    attempt("gpt_block", GPTBlock(), torch.randint(0, 50, (2, 12)), True)
if "resnet18" in sys.argv[2:]:
    import torchvision
    attempt("resnet18", torchvision.models.resnet18(), torch.randn(2, 3, 224, 224), True)
if "torchvision" in sys.argv[2:]:
    # torchvision's own models at 224×224, random weights (too large to
    # commit: for runs on the machine that exports them).
    import torchvision
    names = os.environ.get("TV_MODELS", "resnet18,resnet50,mobilenet_v2,mobilenet_v3_small,efficientnet_b0,densenet121,"
                           "googlenet,shufflenet_v2_x1_0,squeezenet1_1,convnext_tiny,regnet_y_400mf,vgg11_bn")
    for name in names.split(","):
        extra = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
        attempt(name, getattr(torchvision.models, name)(**extra), torch.randn(2, 3, 224, 224), True)
if "timm" in sys.argv[2:]:
    # timm's CNNs (ResNet-D stems and average-pool shortcuts, SE and split
    # attention, CSP, DLA aggregation, mixed depthwise kernels, TF "same"
    # padding, Ghost and ReXNet blocks), random weights, 224×224: for runs
    # on the machine that exports them.
    import timm
    names = os.environ.get("TIMM_MODELS", "resnet18d,seresnet18,resnest14d,cspresnet50,dla34,mixnet_s,"
                           "tf_efficientnet_b0,ghostnet_100,rexnet_100,regnetx_002")
    for name in names.split(","):
        try:
            model = timm.create_model(name, pretrained=False)
        except Exception as e:
            print(name, "FAILED to build:", type(e).__name__, str(e)[:200])
            continue
        attempt(name, model, torch.randn(2, 3, 224, 224), True)
if "cnns" in sys.argv[2:]:
    print("torch", torch.__version__, "dynamo" if kw.get("dynamo") else "torchscript")
    attempt("resnet_basic", ResNetBasic(), torch.randn(2, 3, 32, 32), True)
    attempt("resnet_bottleneck", ResNetBottleneck(), torch.randn(2, 3, 36, 36), True)
    attempt("mobilenet_v2", MobileNetV2(), torch.randn(2, 3, 32, 32), True)
    attempt("se_net", SENet(), torch.randn(2, 3, 32, 32), True)
    attempt("pools", Pools(), torch.randn(2, 4, 15, 15), True)
    attempt("inception_dense", InceptionDense(), torch.randn(2, 3, 16, 16), True)
    attempt("shufflenet", ShuffleNet(), torch.randn(2, 3, 35, 35), True)
    attempt("convnext", ConvNeXt(), torch.randn(2, 3, 32, 32), True)
    attempt("padding_modes", PaddingModes(), torch.randn(2, 3, 12, 13), True)
    attempt("upsample_norms", UpsampleNorms(), torch.randn(2, 3, 10, 12), True)
