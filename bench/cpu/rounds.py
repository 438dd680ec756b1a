# Strata's bench/cpu alternated with PyTorch eager and torch.compile
# (Inductor's C++ backend) in one process, for ratios measured in the same
# round on the same machine state (between processes, and between machine
# starts, the device's memory-bound figures moved 2-3x):
#
#   go build -o cpubench ./bench/cpu
#   python3 bench/cpu/rounds.py --bench ./cpubench [--rounds 3] [--threads N] [--out DIR]
#
# torch is imported and each workload compiled once (each compile under
# --compile-timeout seconds: Inductor's first compile of a process has
# taken 52-72 s on the device's 16-core CPU; a workload whose compile runs
# out is timed eager only). Then each round runs the bench (all six
# workloads, --reps calls each, results released) and times torch eager
# and the compiled functions, printing the round's figures at once. At
# the end: the medians over rounds, the same-round ratios and the
# memory-bound workloads' share of the bench's copy bandwidth. With
# --interp, one more bench run with the interpreter gives the speedups
# over it. The bench's outputs are written to --out.
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from torch_cpu import WORKLOADS  # noqa: E402

TRAFFIC = {"pointwise": 4 * 4 * (16 << 20), "softmax": 2 * 4 * 2048 * 4096,
           "layer_norm": 2 * 4 * 4096 * 1024, "rowsum": 4 * 4096 * 4096}


def median_ms(f, reps):
    f()
    ws = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ws.append(time.perf_counter() - t)
    return statistics.median(ws) * 1e3


def run_bench(args, tag, extra):
    """Runs the bench; returns its rows (name -> median ms) and copy GB/s."""
    try:
        p = subprocess.run([args.bench] + extra, capture_output=True, text=True, timeout=args.bench_timeout)
        text = p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        text = "timed out after %d s" % args.bench_timeout
    if args.out:
        with open(os.path.join(args.out, tag + ".txt"), "w") as f:
            f.write(text)
    bw = re.search(r"copy bandwidth ([\d.]+) GB/s", text)
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) > 6 and f[3] == "s" and re.match(r"^[\d.]+$", f[4]):
            rows[f[0]] = (float(f[4]), line)
    if not rows:
        print("%s: no results: %s" % (tag, text.strip()[-300:]), flush=True)
    return rows, float(bw.group(1)) if bw else None


class CompileTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise CompileTimeout()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="the bench/cpu binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=40, help="calls timed per workload and round")
    ap.add_argument("--out", default="", help="directory for the bench's outputs")
    ap.add_argument("--compile", default="softmax,layer_norm,rowsum,matmul,mlp", help="workloads to torch.compile")
    ap.add_argument("--compile-timeout", type=int, default=30, help="seconds for each workload's first compiled call")
    ap.add_argument("--bench-timeout", type=int, default=30)
    ap.add_argument("--interp", action="store_true", help="one more bench run with the interpreter")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    t0 = time.time()
    print("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()), flush=True)
    names = list(WORKLOADS)
    inputs = {n: WORKLOADS[n][1]() for n in names}
    compiled = {}
    if not hasattr(torch, "compile"):
        print("torch %s has no torch.compile: eager only" % torch.__version__, flush=True)
    elif args.compile:
        signal.signal(signal.SIGALRM, on_alarm)
        for n in filter(None, args.compile.split(",")):
            t = time.perf_counter()
            signal.alarm(args.compile_timeout)
            try:
                c = torch.compile(WORKLOADS[n][0])
                c(*inputs[n])
                compiled[n] = c
                print("compiled %s: first call %.1f s" % (n, time.perf_counter() - t), flush=True)
            except CompileTimeout:
                print("compile %s: over %d s, eager only" % (n, args.compile_timeout), flush=True)
            except Exception as x:  # a backend error: time eager only
                print("compile %s failed: %s" % (n, x), flush=True)
            finally:
                signal.alarm(0)
    res = {n: {"strata": [], "eager": [], "compile": []} for n in names}
    bws = []
    for r in range(args.rounds):
        rows, bw = run_bench(args, "strata%d" % r, ["-interp=false", "-reps", str(args.reps)])
        bws.append(bw)
        line = []
        for n in names:
            fn = WORKLOADS[n][0]
            e = median_ms(lambda: fn(*inputs[n]), max(3, args.reps // 4) if n == "pointwise" else args.reps)
            res[n]["eager"].append(e)
            part = "%s strata %s eager %.3f" % (n, "%.3f" % rows[n][0] if n in rows else "-", e)
            if n in rows:
                res[n]["strata"].append(rows[n][0])
            if n in compiled:
                c = compiled[n]
                ct = median_ms(lambda: c(*inputs[n]), args.reps)
                res[n]["compile"].append(ct)
                part += " compile %.3f" % ct
            line.append(part)
        print("round %d (%.0f s; copy %s GB/s): %s" % (r + 1, time.time() - t0, bw, "; ".join(line)), flush=True)
    bw = statistics.median([b for b in bws if b]) if any(bws) else None
    print("\nmedians over %d rounds (ms); ratios are each round's strata / torch" % args.rounds)
    for n in names:
        s, e, c = res[n]["strata"], res[n]["eager"], res[n]["compile"]
        out = "%-10s strata %s eager %.3f" % (n, "%.3f" % statistics.median(s) if s else "-", statistics.median(e))
        if c:
            out += " compile %.3f" % statistics.median(c)
        if s:
            out += " | ÷eager " + " ".join("%.2f" % (a / b) for a, b in zip(s, e))
            if c:
                out += " | ÷compile " + " ".join("%.2f" % (a / b) for a, b in zip(s, c))
            if n in TRAFFIC and bw:
                out += " | %.0f%% of copy" % (100 * TRAFFIC[n] / (statistics.median(s) / 1e3) / (bw * 1e9))
        print(out)
    if args.interp:
        rows, _ = run_bench(args, "interp", ["-reps", "20"])
        for _, line in rows.values():
            print("interp: " + " ".join(line.split()))
    print("total %.0f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
