#!/usr/bin/env python3
"""Energy, power and SM clock of the attention rows' kernels, per launch.

The attention rows' Strata kernels slow down after the bench's 50 ms of
back-to-back warm-up launches while the SM clock drops at 600-650 W, and
PyTorch's lose little to the same loop (bench/NOTES.md, session 18). This
script measures what a launch costs the device in energy on both sides:

  energy_side.py sample OUT.csv SECONDS
      polls NVML (libnvidia-ml.so.1 through ctypes) every 5 ms for SECONDS:
      the total energy counter (mJ), power (mW), SM and memory clocks (MHz),
      the clock event (throttle) reasons and the temperature, one CSV row a
      sample, Unix nanoseconds first.
  energy_side.py torch [--ncu]
      runs PyTorch's SDPA at the rows' sizes (b16 h16 s1024, d64 and d128,
      bf16) in the phases of passes/togpu's TestGPUFlashEnergy: 0.7 s idle,
      about 1.5 s of launches back to back, 1.2 s of one launch a
      millisecond (the SM clock at its top), then the row's timing loop
      (triton's do_bench, 50 ms warm-up and 100 ms timed) repeated for
      about 1.2 s, each logged as "PHASE name start end launches ms"; with
      --ncu it launches each once and times nothing (a run for ncu).
  energy_side.py report SAMPLES.csv LOG...
      joins the PHASE lines of the logs with the samples: per phase its
      ms a launch, the energy a launch (the counter's difference over the
      phase; and above the idle power of the phase before), mean power,
      mean and lowest SM clock and the share of samples with a power-cap
      clock reason.
  energy_side.py ncu RAW.csv...
      prints, kernel by kernel, the instruction and traffic metrics of ncu
      reports exported with --page raw --csv: instructions by pipe,
      workgroup-memory wavefronts, L2 and DRAM bytes, time and clock.
"""
import ctypes
import re
import sys
import time


def nvml():
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    if lib.nvmlInit_v2() != 0:
        raise SystemExit("nvmlInit_v2 failed")
    h = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) != 0:
        raise SystemExit("nvmlDeviceGetHandleByIndex_v2 failed")
    return lib, h


def sample(path, seconds):
    lib, h = nvml()
    e, reasons = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    p, sm, mem, temp = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    # (Renamed nvmlDeviceGetCurrentClocksEventReasons in newer drivers.)
    reasons_fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    end = time.time() + seconds
    with open(path, "w") as f:
        f.write("t_ns,energy_mJ,power_mW,sm_MHz,mem_MHz,reasons,temp_C\n")
        while time.time() < end:
            lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(e))
            lib.nvmlDeviceGetPowerUsage(h, ctypes.byref(p))
            lib.nvmlDeviceGetClockInfo(h, 1, ctypes.byref(sm))  # NVML_CLOCK_SM
            lib.nvmlDeviceGetClockInfo(h, 2, ctypes.byref(mem))  # NVML_CLOCK_MEM
            if reasons_fn is not None:
                reasons_fn(h, ctypes.byref(reasons))
            lib.nvmlDeviceGetTemperature(h, 0, ctypes.byref(temp))
            f.write(f"{time.time_ns()},{e.value},{p.value},{sm.value},{mem.value},{reasons.value:#x},{temp.value}\n")
            time.sleep(0.005)


def run_torch(ncu):
    import torch
    import torch.nn.functional as F

    def phase(name, start, launches, ms):
        print(f"PHASE {name} {start} {time.time_ns()} {launches} {ms:.4f}", flush=True)

    for d in (64, 128):
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(16, 16, 1024, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))

        def fn():
            return F.scaled_dot_product_attention(q, k, v)

        fn()
        torch.cuda.synchronize()
        if ncu:
            continue
        try:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
            print(f"d{d} kernels: {names}", flush=True)
        except Exception as e:  # (the kernels' names are a nicety)
            print(f"d{d} kernels: profiler failed: {e}", flush=True)
        name = f"torch-d{d}"
        start = time.time_ns()
        time.sleep(0.7)
        phase(name + "-idle", start, 0, 0)
        t = time.perf_counter()
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t) * 1e3 / 50
        n = int(1500 / ms)
        start = time.time_ns()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        phase(name + "-b2b", start, n, (time.perf_counter() - t) * 1e3 / n)
        time.sleep(0.3)
        start, paced = time.time_ns(), 0
        nxt = time.perf_counter()
        while time.time_ns() - start < 1.2e9:
            fn()
            torch.cuda.synchronize()
            paced += 1
            nxt += 1e-3
            time.sleep(max(0.0, nxt - time.perf_counter()))
        phase(name + "-paced", start, paced, 0)
        from triton.testing import do_bench
        medians = []
        start = time.time_ns()
        while time.time_ns() - start < 1.2e9:
            medians.append(do_bench(fn, warmup=50, rep=100, return_mode="median"))
        medians.sort()
        # do_bench's counts: 50 ms and 100 ms over its own estimate, the mean
        # of five cache clears (256 MiB) and calls; made again here.
        cache = torch.empty(64 << 20, dtype=torch.int, device="cuda")
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(5):
            cache.zero_()
            fn()
        end.record()
        torch.cuda.synchronize()
        est = begin.elapsed_time(end) / 5
        del cache
        launches = len(medians) * (max(1, int(50 / est)) + max(1, int(100 / est)) + 5)
        phase(name + "-row", start, launches, medians[len(medians) // 2])


def report(samples, logs):
    rows = []
    with open(samples) as f:
        next(f)
        for line in f:
            t, e, p, sm, mem, r, temp = line.strip().split(",")
            rows.append((int(t), int(e), int(p), int(sm), int(mem), int(r, 16), int(temp)))
    if not rows:
        raise SystemExit("no samples")

    def energy_at(t):
        # The counter linearly between the two samples around t.
        for i in range(1, len(rows)):
            if rows[i][0] >= t:
                (t0, e0), (t1, e1) = rows[i - 1][:2], rows[i][:2]
                return e0 + (e1 - e0) * (t - t0) / max(t1 - t0, 1)
        return float("nan")

    phases = []
    for log in logs:
        with open(log) as f:
            for line in f:
                m = re.search(r"PHASE (\S+) (\d+) (\d+) (\d+) ([\d.]+)", line)
                if m:
                    phases.append((m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), float(m.group(5))))
    print(f"{'phase':42} {'ms':>7} {'launches':>8} {'mJ/launch':>9} {'above idle':>10} {'W':>6} {'SM MHz':>7} {'min':>5} {'pwrcap':>6} {'°C':>3}")
    idle_w = float("nan")
    for name, t0, t1, n, ms in phases:
        inside = [r for r in rows if t0 <= r[0] <= t1]
        secs = (t1 - t0) / 1e9
        de = energy_at(t1) - energy_at(t0)
        w = de / 1e3 / secs if secs > 0 else float("nan")
        if name.endswith("-idle"):
            idle_w = w
        per = de / n if n else float("nan")
        above = (de - idle_w * secs * 1e3) / n if n else float("nan")
        if inside:
            clk = sum(r[3] for r in inside) / len(inside)
            low = min(r[3] for r in inside)
            cap = sum(1 for r in inside if r[5] & 0x4) / len(inside)
            temp = max(r[6] for r in inside)
        else:
            clk = low = cap = temp = float("nan")
        print(f"{name:42} {ms:7.4f} {n:8d} {per:9.3f} {above:10.3f} {w:6.1f} {clk:7.0f} {low:5.0f} {cap:6.2f} {temp:3.0f}")


NCU_METRICS = re.compile(
    r"^(gpu__time_duration\.sum|sm__cycles_elapsed\.avg\.per_second|smsp__inst_executed\.sum|launch__(grid_size|block_size|registers_per_thread)"
    r"|s[mp_s]*__inst_executed_pipe_.*|sm__pipe_.*cycles_active.*|l1tex__data_pipe_lsu_wavefronts_mem_shared.*\.sum|lts__t_(bytes|sectors)(_srcunit_tex)?(_op_read)?\.sum"
    r"|dram__bytes_(read|write)\.sum|sass__inst_executed_per_opcode.*|smsp__average_warp.*|smsp__warp_issue_stalled.*per_warp_active.*)$")


def ncu(paths):
    import csv
    for path in paths:
        with open(path) as f:
            rows = [r for r in csv.reader(f) if len(r) > 3]
        if len(rows) < 3:
            print(f"{path}: no kernels")
            continue
        head, units, kernels = rows[0], rows[1], rows[2:]
        name = head.index("Kernel Name") if "Kernel Name" in head else None
        print(f"== {path}")
        if name is not None:
            for i, k in enumerate(kernels):
                print(f"kernel {i}: {k[name][:110]}")
        for j, h in enumerate(head):
            if NCU_METRICS.match(h):
                vals = " | ".join(k[j] if j < len(k) else "" for k in kernels)
                print(f"{h} [{units[j]}]: {vals}")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "sample":
        sample(sys.argv[2], float(sys.argv[3]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "torch":
        run_torch("--ncu" in sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "ncu":
        ncu(sys.argv[2:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
