#!/usr/bin/env bash
# Session 12, call 2 (main 3e1f846): first/nhwc/gemm helpers' requests, batched.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
el "models"
STRATA_LOGS=compile,autotune STRATA_TORCH_COMPILE=none OUT=$OUT timeout 200 bash "$here/run-models-device.sh" --only cnn_small_train,resnet50_infer,resnet50_train,gpt2_train,gpt2_dynamic --profile 1 > "$OUT/models-run.log" 2>&1; el "models rc $?"
tar -C "$OUT" -cf "$OUT/profiles.tar" $(cd "$OUT" && ls *.profile.txt 2>/dev/null) && rm -f "$OUT"/*.profile.txt
el "nchw A/B"
mkdir -p /tmp/nchw && STRATA_CHANNELS_LAST=off timeout 60 "$here/strata-models" run --out /tmp/nchw --only resnet50_infer > "$OUT/nchw.log" 2>&1; el "nchw rc $?"
{
el "cudnn TestGPUConv"
(cd runtime/cudnn && timeout 60 "$here/runtime_cudnn.test" -test.run 'TestGPUConv$' -test.v 2>&1 | tail -60)
el "exec TestGPUCuDNN"
(cd runtime/exec && timeout 60 "$here/runtime_exec.test" -test.run 'TestGPUCuDNN$' -test.v 2>&1 | grep -E "^(=== RUN|--- |ok|FAIL|PASS)|seed|cuDNN [0-9]|panic" | head -40)
el "gemm"
cd passes/togpu
timeout 100 "$here/passes_togpu.test" -test.run 'TestGPUWGMMAGemm$/^128x256x64s4(go|wst|wstp132|wstc2|wstc2p132)$' -test.v 2>&1 | grep -E 'gemm 8192|FAIL|^ok|PASS$|panic|error'
timeout 40 "$here/passes_togpu.test" -test.run 'TestGPUTMAGraph' -test.v 2>&1 | grep -E '^(---|    ---|ok|FAIL)|panic|error'
timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUMMA$/mm_bias_gelu/128x256x64s4(go|wst|wstp132|wstc2|wstc2p132)$' -test.v 2>&1 | grep -E 'mm_bias_gelu|FAIL|^ok'
timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUTMAShapes/(qkv|mlp-down)' -test.v 2>&1 | grep -E 'cuBLASLt|TFLOP|FAIL|^ok'
el "sanitizers"
timeout 60 compute-sanitizer --tool memcheck "$here/passes_togpu.test" -test.run 'TestGPUTMAGraph/128x256x64s4wstc2' 2>&1 | tail -4
timeout 60 compute-sanitizer --tool racecheck "$here/passes_togpu.test" -test.run 'TestGPUTMAGraph/128x256x64s4wstc2' 2>&1 | tail -4
el "done"
} > "$OUT/tests.log" 2>&1
grep -h "first call\|ms (first" "$OUT/report.txt" | cut -c1-200
tail -n 4 "$OUT/nchw.log"
grep -E "\[|FAIL|gemm 8192|mm_bias_gelu|ERROR SUMMARY|RACECHECK|--- " "$OUT/tests.log" | head -60
