"""PyTorch side of the examples' first-call comparison (issue 9).

The same programs as examples/mlp, examples/transformer and
examples/graphbreak, written in PyTorch and run with torch.compile (default
mode) on the GPU. Each example runs in a fresh process with empty Inductor
and Triton caches, so its first call pays tracing, Inductor's compile and
Triton's kernel builds, as Strata's examples pay theirs; CUDA is initialised
before the clock starts (Strata's examples report their device start-up as
a phase of its own). Prints, per example, the first call and the mean time
of a cached call on GPU-resident inputs.

    python3 bench/examples_torch.py            # all three, one process each
    python3 bench/examples_torch.py mlp        # one, in this process
"""

import math
import os
import subprocess
import sys
import tempfile
import time

EXAMPLES = ["mlp", "transformer", "graphbreak"]


def mlp_example(torch):
    g = torch.Generator(device="cuda").manual_seed(1)
    w1 = torch.rand(16, 32, device="cuda", generator=g)
    b1 = torch.rand(32, device="cuda", generator=g)
    w2 = torch.rand(32, 10, device="cuda", generator=g)
    b2 = torch.rand(10, device="cuda", generator=g)

    def mlp(x):
        h = torch.relu(x @ w1 + b1)
        return torch.softmax(h @ w2 + b2, dim=-1)

    x = torch.rand(4, 16, device="cuda", generator=g)
    return mlp, [(x,)]


def transformer_example(torch):
    import torch.nn.functional as F

    d_model, heads, d_ff = 32, 4, 64
    g = torch.Generator(device="cuda").manual_seed(2)

    def scaled(*shape):
        a = 1 / math.sqrt(shape[0])
        return torch.rand(*shape, device="cuda", generator=g) * 2 * a - a

    ones, zeros = torch.ones(d_model, device="cuda"), torch.zeros(d_model, device="cuda")
    wq, wk, wv, wo = (scaled(d_model, d_model) for _ in range(4))
    w1, b1 = scaled(d_model, d_ff), torch.zeros(d_ff, device="cuda")
    w2, b2 = scaled(d_ff, d_model), torch.zeros(d_model, device="cuda")

    def block(x):
        n, seq, _ = x.shape
        dh = d_model // heads

        def split(t):
            return t.reshape(n, seq, heads, dh).transpose(1, 2)

        h = F.layer_norm(x, (d_model,), ones, zeros, 1e-5)
        q, k, v = split(h @ wq), split(h @ wk), split(h @ wv)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + a.transpose(1, 2).reshape(n, seq, d_model) @ wo
        h = F.layer_norm(x, (d_model,), ones, zeros, 1e-5)
        h = F.gelu(h @ w1 + b1, approximate="tanh") @ w2 + b2
        return x + h

    xs = [(torch.rand(2, seq, d_model, device="cuda", generator=g),) for seq in (8, 16)]
    return block, xs


def graphbreak_example(torch):
    def normalize(x):
        norm = (x * x).sum().sqrt()
        if norm.item() < 1e-6:  # a graph break, as Item is in Strata
            return x
        return torch.tanh(x / norm)

    x = torch.tensor([3.0, 4.0], device="cuda")
    return normalize, [(x,)]


def run_one(name):
    import torch

    torch.ones(1, device="cuda")  # CUDA start-up, outside the clock
    torch.cuda.synchronize()
    fn, calls = globals()[name + "_example"](torch)
    compiled = torch.compile(fn)
    t0 = time.perf_counter()
    compiled(*calls[0])
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    later = []
    for args in calls[1:]:  # new shapes: automatic dynamic recompiles
        t0 = time.perf_counter()
        compiled(*args)
        torch.cuda.synchronize()
        later.append(time.perf_counter() - t0)
    args = calls[-1]
    for _ in range(20):
        compiled(*args)
    torch.cuda.synchronize()
    n = 1000
    t0 = time.perf_counter()
    for _ in range(n):
        compiled(*args)
    torch.cuda.synchronize()
    per_call = (time.perf_counter() - t0) / n
    extra = "".join(f", call with new shapes {t * 1e3:.1f} ms" for t in later)
    print(f"torch.compile {name}: first call {first * 1e3:.1f} ms{extra}; cached call {per_call * 1e6:.1f} µs (mean of {n}, GPU-resident inputs)")


def main():
    if len(sys.argv) > 1:
        run_one(sys.argv[1])
        return
    for name in EXAMPLES:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"), TRITON_CACHE_DIR=os.path.join(d, "triton"))
            subprocess.run([sys.executable, __file__, name], env=env, check=False)


if __name__ == "__main__":
    main()
