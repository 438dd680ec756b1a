#!/usr/bin/env python3
"""PyTorch side of Strata's GPU benchmark suite.

    python3 torch_side.py DIR

DIR is what `strata-bench prepare --out DIR` left: prepare.json lists the
workloads, their input .npy files and the file names for PyTorch's outputs.
For every workload this script loads the same inputs, writes eager PyTorch's
outputs (the reference Strata's results are checked against), times eager and
each torch.compile mode the manifest asks for, and writes DIR/torch.json with
the timings, first-call seconds and the device's measured ceilings.

Timings are medians of CUDA-event measurements by triton.testing.do_bench,
with the warm-up and measuring times prepare.json records (strata-bench's
--warmup-ms and --rep-ms; 50 and 300 ms by default). First calls are timed
from a cold Inductor cache (a fresh TORCHINDUCTOR_CACHE_DIR and torch._dynamo.reset()
before each mode), so they include tracing, compilation and loading.
"""
import json
import math
import os
import sys
import tempfile
import time
import traceback

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="strata-bench-inductor-"))

import numpy as np
import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEVICE = "cuda"
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


# do_bench's warm-up and measuring times, ms: the manifest's (strata-bench
# prepare --warmup-ms/--rep-ms), so that both sides of a row time alike.
TIMING = {"warmup": 50, "rep": 300}


def median_ms(fn):
    return do_bench(fn, warmup=TIMING["warmup"], rep=TIMING["rep"], return_mode="median")


# The workloads, keyed by the names the Go runner uses. Each takes the
# workload's non-Strata-only inputs in manifest order and returns a tuple of
# outputs in manifest order.
def pointwise(x, a, b):
    return (torch.relu(x * a + b) * torch.sigmoid(x),)


def softmax(x):
    return (torch.softmax(x, dim=-1),)


def layernorm(x, w, b):
    return (F.layer_norm(x, (x.shape[-1],), w, b, 1e-5),)


def rowsum(x):
    return (x.sum(dim=-1),)


def mm_bias_gelu(x, w, b):
    return (F.gelu(x @ w + b, approximate="tanh"),)


def gemm(x, w):
    return (x @ w,)


def attention(q, k, v):
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    return (torch.softmax(s, dim=-1) @ v,)


def attention_sdpa(q, k, v):
    return (F.scaled_dot_product_attention(q, k, v),)


def attention_causal(q, k, v):
    return (F.scaled_dot_product_attention(q, k, v, is_causal=True),)


def tiny_chain(x):
    for _ in range(10):
        x = torch.sin(x) * 1.01 + 0.1
    return (x,)


def mlp_train(x, w1, w2):
    # The loss Strata differentiates: mean((gelu_tanh(x@w1) @ w2)²) in f32.
    h = F.gelu(x @ w1, approximate="tanh")
    loss = (h @ w2).float().pow(2).mean()
    return tuple(torch.autograd.grad(loss, (w1, w2)))


def attention_train(w, q, k, v):
    # The loss Strata differentiates: sum(causal_attention(q, k, v) · w) in f32.
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    loss = (o.float() * w).sum()
    return tuple(torch.autograd.grad(loss, (q, k, v)))


def conv_bn_relu(x, w, s, t):
    # stride 1, padding k/2: the size is kept (bench/workloads.go).
    return (F.relu(F.conv2d(x, w, padding=w.shape[-1] // 2) * s + t),)


WORKLOADS = {
    "pointwise": pointwise,
    "softmax": softmax,
    "layernorm": layernorm,
    "rowsum": rowsum,
    "mm_bias_gelu": mm_bias_gelu,
    "gemm_own_bf16": gemm,
    "attention": attention,
    "attention_d128": attention_sdpa,
    "attention_causal": attention_causal,
    "attention_causal_d128": attention_causal,
    "tiny_chain": tiny_chain,
    "mlp_train": mlp_train,
    "attention_train": attention_train,
    "attention_train_d128": attention_train,
    "softmax_dynamic": softmax,
    "conv3x3_bn_relu": conv_bn_relu,
    "conv1x1_bn_relu": conv_bn_relu,
}
# Workloads whose inputs are differentiated.
NEEDS_GRAD = {"mlp_train": (1, 2), "attention_train": (1, 2, 3), "attention_train_d128": (1, 2, 3)}


def load_inputs(d, workload, variant):
    args = []
    for i, spec in enumerate(variant["inputs"]):
        if spec.get("strata_only"):
            continue
        a = np.load(os.path.join(d, spec["file"]))
        t = torch.from_numpy(a).to(DEVICE).to(DTYPES[spec["dtype"]])
        if i in NEEDS_GRAD.get(workload["name"], ()):
            t.requires_grad_()
        args.append(t)
    return args


def save_outputs(d, variant, outs):
    specs = variant["outputs"]
    if len(outs) != len(specs):
        raise ValueError(f"{len(outs)} outputs, the manifest lists {len(specs)}")
    for spec, t in zip(specs, outs):
        if list(t.shape) != spec["shape"]:
            raise ValueError(f"output {spec['name']}: shape {list(t.shape)}, want {spec['shape']}")
        np.save(os.path.join(d, spec["torch_file"]), t.detach().float().cpu().numpy())


def compile_kwargs(mode):
    return {} if mode == "default" else {"mode": mode}


def first_call(fn, args):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def wall_ms(fn, ms):
    """Host-clock milliseconds per call over back-to-back calls (about 20 ms
    of device time, 10 to 2000 calls), as the Go runner's wall_ms: for a
    launch-bound program, the cost of issuing a call."""
    n = int(min(max(20 / max(ms, 1e-3), 10), 2000))
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n


def run_static(d, w, fn):
    variant = w["variants"][0]
    args = load_inputs(d, w, variant)
    save_outputs(d, variant, fn(*args))
    modes = {"eager": {"ms": median_ms(lambda: fn(*args))}}
    for mode in w["torch_modes"]:
        try:
            torch._dynamo.reset()
            c = torch.compile(fn, **compile_kwargs(mode))
            row = {"first_call_s": first_call(c, args)}
            row["ms"] = median_ms(lambda: c(*args))
            row["wall_ms"] = wall_ms(lambda: c(*args), row["ms"])
            modes[mode] = row
        except Exception as e:  # one mode failing must not lose the others
            traceback.print_exc()
            modes[mode] = {"error": f"{type(e).__name__}: {e}"[:500]}
    return modes


def run_dynamic(d, w, fn):
    # Eager results first: they are the reference; then one compile with
    # dynamic=True, timed over the first call of every size.
    inputs = [load_inputs(d, w, v) for v in w["variants"]]
    for v, args in zip(w["variants"], inputs):
        save_outputs(d, v, fn(*args))
    torch._dynamo.reset()
    c = torch.compile(fn, dynamic=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for args in inputs:
        c(*args)
    torch.cuda.synchronize()
    return {"default": {"total_s": time.perf_counter() - t0}}


def ceilings():
    x = torch.empty(2**30, dtype=torch.uint8, device=DEVICE).random_(0, 255)
    y = torch.empty_like(x)
    copy = 2 * x.numel() / median_ms(lambda: y.copy_(x)) / 1e6
    del x, y
    n = 8192
    a = torch.randn(n, n, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn_like(a)
    bf16 = 2 * n**3 / median_ms(lambda: a @ b) / 1e9
    a, b = a.float(), b.float()
    fp32 = 2 * n**3 / median_ms(lambda: a @ b) / 1e9
    del a, b
    torch.cuda.empty_cache()
    return {"copy_GBps": copy, "bf16_mm_TFLOPs": bf16, "fp32_mm_TFLOPs": fp32}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_side.py DIR")
    d = sys.argv[1]
    with open(os.path.join(d, "prepare.json")) as f:
        manifest = json.load(f)
    TIMING["warmup"] = manifest.get("warmup_ms") or TIMING["warmup"]
    TIMING["rep"] = manifest.get("rep_ms") or TIMING["rep"]
    out = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "gpu": torch.cuda.get_device_name(),
        "cuda": torch.version.cuda or "",
        "ceilings": ceilings(),
        "workloads": {},
    }
    print("ceilings", json.dumps(out["ceilings"]), flush=True)
    for w in manifest["workloads"]:
        name = w["name"]
        fn = WORKLOADS.get(name)
        try:
            if fn is None:
                raise KeyError(f"torch_side.py has no workload {name}")
            run = run_dynamic if w["dynamic"] else run_static
            res = {"modes": run(d, w, fn)}
        except Exception as e:
            traceback.print_exc()
            res = {"modes": {}, "error": f"{type(e).__name__}: {e}"[:500]}
        out["workloads"][name] = res
        print(name, json.dumps(res), flush=True)
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    with open(os.path.join(d, "torch.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
