#!/usr/bin/env bash
# Session 12, call 5: racecheck details on Strata's GEMM kernels (the cluster tilings and wst).
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; cd passes/togpu
timeout 90 compute-sanitizer --tool racecheck --racecheck-report analysis --kernel-name kns=main_kernel "$here/passes_togpu.test" -test.run 'TestGPUClusterShapes/tails' -test.v > "$OUT/race-c2.log" 2>&1; echo "c2 rc $?"
timeout 60 compute-sanitizer --tool racecheck --kernel-name kns=main_kernel "$here/passes_togpu.test" -test.run 'TestGPUTMAGraph/128x256x64s4wst$' -test.v > "$OUT/race-wst.log" 2>&1; echo "wst rc $?"
grep -v "^=== RUN" "$OUT/race-c2.log" | head -40; tail -8 "$OUT/race-wst.log"
