# Strata's bench/cpu alternated with PyTorch eager and torch.compile
# (Inductor's C++ backend) in one process, for ratios measured in the same
# round on the same machine state (between processes, and between machine
# starts, the device's memory-bound figures moved 2-3x):
#
#   go build -o cpubench ./bench/cpu
#   python3 bench/cpu/rounds.py --bench ./cpubench [--rounds 3] [--threads N] [--out DIR]
#       [--interp] [--deadline S] [--compile-budget S]
#
# The order puts what matters most first, so that a run cut short still
# reports it: torch is imported, then round 1 runs the bench (all six
# workloads, --reps calls each, results released) and times torch eager;
# with --interp one bench run with the interpreter gives the speedups over
# it; then each workload of --compile is torch.compile'd, all of them
# within --compile-budget seconds (Inductor's first compile of a process
# has taken 52-72 s on the device's 16-core CPU; a workload whose compile
# runs out is timed eager only); then the remaining rounds time the bench,
# eager and the compiled functions. Every round is printed as it ends. A
# round that would not end before --deadline seconds after the start is
# not started. At the end: a table of the medians over rounds, the
# same-round ratios, the memory-bound workloads' share of the bench's copy
# bandwidth and the speedup over the interpreter. The bench's outputs are
# written to --out.
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

T0 = time.time()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from torch_cpu import WORKLOADS  # noqa: E402

TRAFFIC = {"pointwise": 4 * 4 * (16 << 20), "softmax": 2 * 4 * 2048 * 4096,
           "layer_norm": 2 * 4 * 4096 * 1024, "rowsum": 4 * 4096 * 4096,
           "gemv": 4 * 4096 * 4096, "linear_t": 4 * 4096 * 4096}


def elapsed():
    return time.time() - T0


def median_ms(f, reps):
    f()
    ws = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ws.append(time.perf_counter() - t)
    return statistics.median(ws) * 1e3


# A bench row: name, shape, compile time and "s", median, min, cpu ms, the
# rate, and with the interpreter its ms, cpu ms and the speedups.
INTERP = re.compile(r"(?:GB|GFLOP)/s\s+(?:\d+%\s+)?([\d.]+)\s+([\d.]+)\s+(\d+)×, (\d+)×")


def run_bench(args, tag, extra, timeout):
    """Runs the bench; returns its rows (name -> (median ms, line)) and copy GB/s."""
    try:
        p = subprocess.run([args.bench] + extra, capture_output=True, text=True, timeout=max(1, timeout))
        text = p.stdout + p.stderr
    except subprocess.TimeoutExpired as x:
        text = (x.stdout or b"").decode(errors="replace") if isinstance(x.stdout, bytes) else (x.stdout or "")
        text += "\ntimed out after %d s" % timeout
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


class CompileTimeout(BaseException):
    """Raised by SIGALRM in a compile: a BaseException, so that no
    `except Exception` inside torch swallows it and compiles on."""


def on_alarm(signum, frame):
    raise CompileTimeout()


def run_round(args, r, names, inputs, compiled, res, bws):
    rows, bw = run_bench(args, "strata%d" % r, ["-interp=false", "-reps", str(args.reps)], args.bench_timeout)
    bws.append(bw)
    line = []
    for n in names:
        fn = WORKLOADS[n][0]
        e = median_ms(lambda: fn(*inputs[n]), max(3, args.reps // 4) if n == "pointwise" else args.reps)
        res[n]["eager"].append(e)
        part = "%s strata %s eager %.3f" % (n, "%.3f" % rows[n][0] if n in rows else "-", e)
        res[n]["strata"].append(rows[n][0] if n in rows else None)
        ct = None
        if n in compiled:
            c = compiled[n]
            ct = median_ms(lambda: c(*inputs[n]), args.reps)
            part += " compile %.3f" % ct
        res[n]["compile"].append(ct)
        line.append(part)
    print("round %d (%.0f s; copy %s GB/s): %s" % (r + 1, elapsed(), bw, "; ".join(line)), flush=True)


def ratios(a, b):
    return " ".join("%.2f" % (x / y) for x, y in zip(a, b) if x is not None and y is not None)


def summary(args, names, res, bws, interp):
    bw = statistics.median([b for b in bws if b]) if any(bws) else None
    print("\nsummary at %.0f s: %d round(s); ms are medians over rounds; ÷ are each round's strata / torch; "
          "copy bandwidth %s GB/s" % (elapsed(), len(bws), "%.1f" % bw if bw else "-"), flush=True)
    print("%-10s %8s %8s %8s  %-16s %-16s %6s %9s %7s" % ("workload", "strata", "eager", "inductor", "÷eager",
                                                          "÷inductor", "copy%", "interp", "×interp"))
    for n in names:
        s = [x for x in res[n]["strata"] if x is not None]
        e = res[n]["eager"]
        c = [x for x in res[n]["compile"] if x is not None]
        med = statistics.median(s) if s else None
        share = "-"
        if n in TRAFFIC and bw and med:
            share = "%.0f%%" % (100 * TRAFFIC[n] / (med / 1e3) / (bw * 1e9))
        im, speed = "-", "-"
        if n in interp:
            im = "%.1f" % interp[n]
            if med:
                speed = "%.0f" % (interp[n] / med)
        print("%-10s %8s %8.3f %8s  %-16s %-16s %6s %9s %7s" % (
            n, "%.3f" % med if med else "-", statistics.median(e), "%.3f" % statistics.median(c) if c else "-",
            ratios(res[n]["strata"], e) or "-", ratios(res[n]["strata"], res[n]["compile"]) or "-", share, im, speed),
            flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="the bench/cpu binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=40, help="calls timed per workload and round")
    ap.add_argument("--out", default="", help="directory for the bench's outputs")
    ap.add_argument("--compile", default="softmax,layer_norm,matmul,mlp,rowsum",
                    help="workloads to torch.compile, in this order")
    ap.add_argument("--compile-timeout", type=int, default=30, help="seconds for each workload's first compiled call")
    ap.add_argument("--compile-budget", type=int, default=0, help="seconds for all the compiles (0: no limit but the deadline)")
    ap.add_argument("--bench-timeout", type=int, default=30)
    ap.add_argument("--interp", action="store_true", help="one bench run with the interpreter, after round 1")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--deadline", type=float, default=0, help="seconds from the start: no round, compile or bench run starts that would end later (0: none)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    deadline = args.deadline if args.deadline > 0 else float("inf")
    print("torch %s, %d threads; imported in %.1f s" % (torch.__version__, torch.get_num_threads(), elapsed()), flush=True)
    names = list(WORKLOADS)
    inputs = {n: WORKLOADS[n][1]() for n in names}
    res = {n: {"strata": [], "eager": [], "compile": []} for n in names}
    bws, compiled, interp = [], {}, {}

    t = elapsed()
    run_round(args, 0, names, inputs, compiled, res, bws)
    round_s = elapsed() - t  # the longest round so far

    if args.interp:
        left = deadline - elapsed() - round_s - 3
        if left < 5:
            print("interp: skipped, %.0f s left" % (deadline - elapsed()), flush=True)
        else:
            rows, _ = run_bench(args, "interp", ["-reps", "20"], int(min(left, 4 * args.bench_timeout)))
            for n, (_, line) in rows.items():
                m = INTERP.search(line)
                if m:
                    interp[n] = float(m.group(1))
                print("interp: " + " ".join(line.split())[:200], flush=True)

    if not hasattr(torch, "compile"):
        print("torch %s has no torch.compile: eager only" % torch.__version__, flush=True)
    elif args.compile:
        signal.signal(signal.SIGALRM, on_alarm)
        budget_end = elapsed() + args.compile_budget if args.compile_budget > 0 else float("inf")
        # Leave time for one more round with what compiled.
        budget_end = min(budget_end, deadline - 1.5 * round_s - 3)
        for n in filter(None, args.compile.split(",")):
            left = int(min(args.compile_timeout, budget_end - elapsed()))
            if left < 2:
                print("compile %s: skipped, the compile budget is spent" % n, flush=True)
                continue
            t = time.perf_counter()
            signal.alarm(left)
            try:
                c = torch.compile(WORKLOADS[n][0])
                c(*inputs[n])
                signal.alarm(0)
                compiled[n] = c
                print("compiled %s: first call %.1f s" % (n, time.perf_counter() - t), flush=True)
            except CompileTimeout:
                print("compile %s: over %d s, eager only" % (n, left), flush=True)
            except Exception as x:  # a backend error: time eager only
                signal.alarm(0)
                print("compile %s failed: %s" % (n, str(x)[:300]), flush=True)
            finally:
                signal.alarm(0)

    for r in range(1, args.rounds):
        # A round with compiled functions takes longer than round 1.
        need = round_s * (1.5 if compiled and r == 1 else 1.3) + 2
        if elapsed() + need > deadline:
            print("round %d: skipped, %.0f s to the deadline" % (r + 1, deadline - elapsed()), flush=True)
            break
        t = elapsed()
        run_round(args, r, names, inputs, compiled, res, bws)
        round_s = max(round_s, elapsed() - t)
    summary(args, names, res, bws, interp)
    print("total %.0f s" % elapsed(), flush=True)


if __name__ == "__main__":
    main()
