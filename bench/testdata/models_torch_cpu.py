#!/usr/bin/env python3
"""Runs bench/models_torch.py's rows on the CPU, for bench's
TestModelsTorchCPU: the rows' PyTorch code (the same model on the same
weights, the outputs Strata's report compares) checked without a GPU.

    python3 models_torch_cpu.py BENCH_DIR DIR ROWS

It points models_torch.py at the CPU (autocast on the CPU, no CUDA events:
one untimed call stands for the median) and skips torch.compile, so only
the outputs mean anything, not the times.
"""
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
os.environ["STRATA_TORCH_COMPILE"] = ""

import torch

cuda_autocast = torch.autocast
torch.autocast = lambda device, dtype=None, enabled=True: cuda_autocast("cpu", dtype=dtype, enabled=enabled)
torch.cuda.get_device_name = lambda: "cpu"

import models_torch as mt

if not hasattr(mt.F, "scaled_dot_product_attention"):
    # PyTorch before 2.0 (a CPU-only install): the attention the GPT-2 rows
    # call, written out (scores in float32, causal aligned at the top left).
    import math

    def sdpa(q, k, v, attn_mask=None, is_causal=False):
        s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if is_causal:
            n, m = q.shape[-2], k.shape[-2]
            s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(1), float("-inf"))
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask, float("-inf"))
        return s.softmax(-1).to(q.dtype) @ v

    mt.F.scaled_dot_product_attention = sdpa

if "fused" not in torch.optim.AdamW.__init__.__code__.co_varnames:
    # PyTorch before 2.0: AdamW has no fused CUDA kernel to ask for (nor
    # is there one on the CPU); the same update, unfused.
    cpu_adamw = torch.optim.AdamW
    torch.optim.AdamW = lambda params, fused=False, **kw: cpu_adamw(params, **kw)

mt.DEV = "cpu"
mt.sync = lambda: None


def one_call_ms(fn, budget_ms=0, max_iters=0):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


mt.median_ms = one_call_ms
sys.argv = [sys.argv[0], sys.argv[2], sys.argv[3]]
mt.main()
