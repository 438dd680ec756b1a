"""Exports the PyTorch test models of importers/onnx (run with PyTorch and onnx).

    python3 export.py OUTDIR [small] [resnet18]      (DYNAMO=1: the dynamo exporter)

writes NAME.onnx, NAME.in.npy (the input) and NAME.out.npy (PyTorch's output)
for each model. Weights are random (seeded); the models are in eval mode.
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
        if isinstance(mod, (nn.BatchNorm2d,)):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.5, 0.5)


def export(name, model, x, dynamic_batch, opset=17):
    model.eval()
    randomize_bn(model)
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out, name + ".onnx")
    dyn = {"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                      dynamic_axes=dyn, opset_version=opset, **kw)
    np.save(os.path.join(out, name + ".in.npy"), x.numpy())
    np.save(os.path.join(out, name + ".out.npy"), y.numpy())
    if dynamic_batch:  # a second batch size for the same file
        x2 = torch.randn(5, *x.shape[1:]) if x.is_floating_point() else torch.randint(0, 50, (5, *x.shape[1:]))
        with torch.no_grad():
            y2 = model(x2)
        np.save(os.path.join(out, name + ".in2.npy"), x2.numpy())
        np.save(os.path.join(out, name + ".out2.npy"), y2.numpy())
    print(name, os.path.getsize(path), "bytes")


def attempt(*args, **kwargs):
    try:
        export(*args, **kwargs)
    except Exception as e:  # one failed export must not stop the others
        print(args[0], "FAILED:", type(e).__name__, str(e)[:300])


if "small" in sys.argv[2:] or len(sys.argv) == 2:
    attempt("cnn_small", SmallCNN(), torch.randn(2, 3, 16, 16), True)
    attempt("mlp_dynamic", MLP(), torch.randn(3, 32), True, opset=14)
    enc = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    attempt("transformer_encoder", enc, torch.randn(2, 10, 64), False)
    attempt("gpt_block", GPTBlock(), torch.randint(0, 50, (2, 12)), True)
if "resnet18" in sys.argv[2:]:
    import torchvision
    attempt("resnet18", torchvision.models.resnet18(), torch.randn(2, 3, 224, 224), True)
