#!/usr/bin/env bash
# Session 12, final call (main 0ed4f3f): every model row against torch eager and torch.compile in the same call,
# then the helpers' last requests (first, gemm, epi).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
el "models"
STRATA_LOGS=compile OUT=$OUT timeout 330 bash "$here/run-models-device.sh" --profile 1 > "$OUT/models-run.log" 2>&1; el "models rc $?"
tar -C "$OUT" -cf "$OUT/profiles.tar" $(cd "$OUT" && ls *.profile.txt 2>/dev/null) && rm -f "$OUT"/*.profile.txt
{
el "first: cnn x2"
for i in 1 2; do mkdir -p /tmp/c$i && STRATA_LOGS=compile timeout 40 "$here/strata-models" run --out /tmp/c$i --only cnn_small_train > /tmp/cnn$i.log 2>&1; grep -n "first step\|graph0_fwd:\|a step" /tmp/cnn$i.log; done
el "gemm"
cd passes/togpu
timeout 80 "$here/passes_togpu.test" -test.run 'TestGPUWGMMAGemm$/^128x(256x64s4(wst|wstc2p132)|192x64s5(wst|wstp132))$' -test.v 2>&1 | grep -E 'gemm 8192|FAIL|^ok|panic|error'
timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUMMA$/mm_bias_gelu/^128x(256x64s4(wst|wstp132)|192x64s5(wst|wstp132))$' -test.v 2>&1 | grep -E ' ms,|FAIL|^ok'
timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUMMA$/^128x192x64s5wst$/^(odd-bias-gelu|b-transposed|batched|many-k-tiles)$' -test.v 2>&1 | grep -E '^(---|    ---)|FAIL|^ok'
timeout 60 compute-sanitizer --tool racecheck --kernel-name kns=main_kernel "$here/passes_togpu.test" -test.run 'TestGPUClusterShapes/tails' 2>&1 | tail -3
cd "$root"
STRATA_LOGS=autotune timeout 90 "$here/strata-bench" prepare --out /tmp/sb --only mm_bias_gelu 2>&1 | grep -E 'picked|budget|failed|ms' | tail -12
el "epi: decode b8 default mode"
mkdir -p /tmp/b8 && timeout 60 "$here/strata-models" run --out /tmp/b8 --only gpt2_decode_b8 --mode default --profile 1 > /tmp/b8.log 2>&1; grep -E "ms/step|a step" /tmp/b8.log | head -3; cp /tmp/b8/*.profile.txt "$OUT/b8-default.profile.txt" 2>/dev/null
el "done"
} > "$OUT/tests.log" 2>&1
cat "$OUT/report.txt" | cut -c1-260
grep -E "^\[|FAIL|gemm 8192| ms,|picked|RACECHECK|ERROR|first step|a step" "$OUT/tests.log" | head -50
