#!/bin/bash
# gemm (issue 22), session 8 call 3: the SM clock and power under cuBLASLt's and Strata's 8192³ kernels (steady, 800 launches each).
cd "$(dirname "$0")"
T=./togpu.test
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader -lms 50 > $OUT/smi.csv 2>&1 &
SMI=$!
for sub in cublaslt 128x256x64s4go; do
  echo "== $sub start $(date +%H:%M:%S.%N)"
  timeout 25 $T -test.run '^$' -test.bench "BenchmarkGPUWGMMAGemm/^$sub\$" -test.benchtime 800x > $OUT/bench-$sub.log 2>&1; echo "rc $?"
  echo "== $sub end $(date +%H:%M:%S.%N)"
  grep -E "Benchmark|seed|FAIL|rror" $OUT/bench-$sub.log | head -5
done
kill $SMI
# Per phase: the samples with power above 300 W (the kernels' plateau), their median clock and power.
python3 - "$OUT/smi.csv" <<'PY'
import sys, statistics
rows = []
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    if len(f) < 5: continue
    try: rows.append((f[0], float(f[1].split()[0]), float(f[3].split()[0]), f[4]))
    except ValueError: pass
print(len(rows), "samples")
hot = [r for r in rows if r[2] > 300]
# plateaus: runs of consecutive hot samples
runs, cur = [], []
for r in rows:
    if r[2] > 300: cur.append(r)
    elif cur: runs.append(cur); cur = []
if cur: runs.append(cur)
for run in runs:
    if len(run) < 4: continue
    print(run[0][0], "..", run[-1][0], len(run), "samples: clock median %.0f MHz (min %.0f), power median %.0f W, temperature %s" % (
        statistics.median(r[1] for r in run), min(r[1] for r in run), statistics.median(r[2] for r in run), sorted(set(r[3] for r in run))))
PY
