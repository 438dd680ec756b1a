# PyTorch on this machine's CPU for the workloads of bench/cpu (main.go):
# torch eager, optionally torch.compile (Inductor's C++ backend), and
# NumPy's matmul (its BLAS). For each: median and minimum wall time and
# the process's CPU time per call (user + system, all threads), which on
# a machine shared with other jobs is the steadier figure.
#
#   python3 bench/cpu/torch_cpu.py [--threads N] [--only a,b] [--reps N] [--compile all|a,b]
import argparse
import json
import os
import resource
import tempfile
import time

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp())

import numpy as np
import torch


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(f, reps):
    f()
    walls = []
    c0 = cpu_seconds()
    for _ in range(reps):
        t = time.perf_counter()
        f()
        walls.append(time.perf_counter() - t)
    cpu = (cpu_seconds() - c0) / reps
    walls.sort()
    return {"median_ms": round(walls[reps // 2] * 1e3, 3), "min_ms": round(walls[0] * 1e3, 3), "cpu_ms": round(cpu * 1e3, 3)}


N = 16 << 20
WORKLOADS = {
    "pointwise": (lambda x, a, b: torch.relu(x * a + b) * torch.sigmoid(x), lambda: [torch.randn(N) for _ in range(3)]),
    "softmax": (lambda x: x.softmax(-1), lambda: [torch.randn(2048, 4096)]),
    "layer_norm": (lambda x, g, b: torch.nn.functional.layer_norm(x, (1024,), g, b, 1e-5),
                   lambda: [torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)]),
    "rowsum": (lambda x: x.sum(1), lambda: [torch.randn(4096, 4096)]),
    "matmul": (lambda a, b: a @ b, lambda: [torch.randn(1024, 1024), torch.randn(1024, 1024)]),
    "mlp": (lambda x, w1, w2: torch.nn.functional.gelu(x @ w1, approximate="tanh") @ w2,
            lambda: [torch.randn(256, 1024), torch.randn(1024, 4096), torch.randn(4096, 1024)]),
    "gemv": (lambda x, w, b: x @ w + b, lambda: [torch.randn(1, 4096), torch.randn(4096, 4096), torch.randn(4096)]),
    "linear_t": (lambda x, w: x @ w.t(), lambda: [torch.randn(4, 4096), torch.randn(4096, 4096)]),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--only", default="", help="comma-separated workloads")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--compile", default="", help="also torch.compile (Inductor C++) these workloads (comma-separated, or all)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "numpy": np.__version__}), flush=True)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    if args.compile and not hasattr(torch, "compile"):
        print(json.dumps({"note": "torch %s has no torch.compile: eager only" % torch.__version__}), flush=True)
        args.compile = ""
    for name in names:
        fn, make = WORKLOADS[name]
        inputs = make()
        row = {"name": name, "eager": measure(lambda: fn(*inputs), args.reps)}
        if args.compile == "all" or name in args.compile.split(","):
            torch._dynamo.reset()
            compiled = torch.compile(fn)
            t = time.perf_counter()
            compiled(*inputs)
            row["compile_first_s"] = round(time.perf_counter() - t, 2)
            row["compiled"] = measure(lambda: compiled(*inputs), args.reps)
        print(json.dumps(row), flush=True)
        if name == "matmul":
            a, b = (np.random.randn(1024, 1024).astype(np.float32) for _ in range(2))
            print(json.dumps({"name": "numpy_matmul", "numpy": measure(lambda: a @ b, args.reps)}), flush=True)


if __name__ == "__main__":
    main()
