#!/usr/bin/env bash
# Session 12, call 3 (main a1520ca): every helper's requests, batched.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
el "models"
STRATA_LOGS=compile STRATA_TORCH_COMPILE=none OUT=$OUT timeout 240 bash "$here/run-models-device.sh" --only cnn_small_train,resnet50_infer,resnet50_train,gpt2_train,gpt2_dynamic,gpt2_prefill,gpt2_decode_b8 --profile 1 > "$OUT/models-run.log" 2>&1; el "models rc $?"
tar -C "$OUT" -cf "$OUT/profiles.tar" $(cd "$OUT" && ls *.profile.txt 2>/dev/null) && rm -f "$OUT"/*.profile.txt
{
el "legacy cnn A/B"
mkdir -p /tmp/leg && STRATA_CUDNN_API=legacy STRATA_LOGS=compile timeout 60 "$here/strata-models" run --out /tmp/leg --only cnn_small_train > /tmp/legacy.log 2>&1; grep -n "first\|cuDNN\|graph0_fwd:\|a step" /tmp/legacy.log | head -20
for v in pad-channels=0 pad-channels=8; do el "infer $v"; mkdir -p /tmp/$v && STRATA_CHANNELS_LAST=$v timeout 60 "$here/strata-models" run --out /tmp/$v --only resnet50_infer --profile 1 > /tmp/$v.log 2>&1; grep -E "resnet50_infer: \{|stride 2 pad 3" /tmp/$v.log | head -3; done
el "conv timing"
(cd runtime/cudnn && timeout 60 "$here/runtime_cudnn.test" -test.run 'TestGPUConvTiming$' -test.v 2>&1 | grep -E "1x1|stem|--- |seed" | head -40)
el "cublaslt"
(cd runtime/cublaslt && timeout 60 "$here/runtime_cublaslt.test" -test.run 'TestGPUMatmul' -test.v 2>&1 | grep -E '^(---|    ---|ok|FAIL|PASS)|panic|bias' | head -30)
(cd runtime/exec && timeout 90 "$here/runtime_exec.test" -test.run 'TestGPUCuBLASLt' -test.v 2>&1 | grep -E '^(---|    ---|ok|FAIL|PASS)|panic|on cuBLASLt|ms' | head -40)
el "gemm"
cd passes/togpu
timeout 80 "$here/passes_togpu.test" -test.run 'TestGPUWGMMAGemm$/^128x256x64s4(wst|wstp132|wstc2|wstc2p132)$' -test.v 2>&1 | grep -E 'gemm 8192|FAIL|^ok|panic|error'
timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUClusterShapes|TestGPUTMAGraph' -test.v 2>&1 | grep -E '^(---|    ---|ok|FAIL)|panic|error'
timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUMMA$/mm_bias_gelu/128x256x64s4(wst|wstp132|wstc2|wstc2p132)$' -test.v 2>&1 | grep -E 'mm_bias_gelu|ms|FAIL|^ok'
timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUTMAShapes/(qkv|mlp-down)' -test.v 2>&1 | grep -E 'TFLOP|FAIL|^ok'
timeout 60 compute-sanitizer --tool racecheck --kernel-name-exclude regex:nvjet "$here/passes_togpu.test" -test.run 'TestGPUClusterShapes/tails' 2>&1 | tail -3
el "done"
} > "$OUT/tests.log" 2>&1
grep -h "ms (first" "$OUT/report.txt" | cut -c1-220
grep -E "^\[|FAIL|gemm 8192|TFLOP|ERROR SUMMARY|RACECHECK|resnet50_infer: \{|stride 2 pad 3" "$OUT/tests.log" | head -60
