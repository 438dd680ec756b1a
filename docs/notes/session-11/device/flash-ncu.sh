#!/usr/bin/env bash
# flash, session 11, for a later call (NOT RUN): hardware counters of the d128 default (64x64gplqk),
# the specialized 128x64gplqd and the d64 default (64x128gplq) at b16 h16 s1024, one launch each
# (the 4th: after warm-up), clocks left alone. ≈ 40–60 s warm. Needs togpu.test of h-flash in .device/flash.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for t in d128-causal=false-scale=0-bf16-64x64gplqk d128-causal=false-scale=0-bf16-128x64gplqd d64-causal=false-scale=0-bf16-64x128gplq; do
  timeout 60 ncu --clock-control none -k regex:flash --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section Occupancy --section InstructionStats \
    "$here/togpu.test" -test.run "TestGPUFlash\$/^time-16x16x1024x1024-$t\$" > "$OUT/ncu-$t.txt" 2>&1
  echo "$t rc $?"
done
