#!/usr/bin/env bash
# Session 13 call 2 (main 57ea755): models (acc f64 + gpt + r50t NHWC, profiles), r50t NCHW A/B, exec tests (gpt, tidy), flash, gemm.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
T=$here/passes_togpu.test
{
el "models (acc, gpt, r50t NHWC)"
mkdir -p /tmp/m && STRATA_LOGS=compile STRATA_TORCH_F64=1 STRATA_TORCH_COMPILE=none OUT=/tmp/m timeout 200 bash "$here/run-models-device.sh" --only cnn_small_train,gpt2_train,gpt2_prefill,gpt2_decode_b8,gpt2_dynamic,resnet50_train --profile 1 > /tmp/m/run.log 2>&1; el "models rc $?"
tar -C /tmp/m -czf "$OUT/models.tgz" .
el "r50t NCHW A/B"
mkdir -p /tmp/n && STRATA_LOGS=compile STRATA_CHANNELS_LAST=off STRATA_TORCH_COMPILE=none OUT=/tmp/n timeout 80 bash "$here/run-models-device.sh" --only resnet50_train --profile 1 > /tmp/n/run.log 2>&1; el "nchw rc $?"
tar -C /tmp/n -czf "$OUT/nchw.tgz" .
el "exec tests (gpt, tidy)"
( cd runtime/exec && timeout 30 "$here/runtime_exec.test" -test.run 'TestGPUStagedUploads|TestGPUArrayChain' -test.v 2>&1 | tail -15
  timeout 60 "$here/runtime_exec.test" -test.run 'TestGPULoadPolicies|TestGPUTieredLoad|TestGPUPrecompile|TestGPUMatchesInterpreter|TestGPUWarmStart' -test.v 2>&1 | tail -25 ) > "$OUT/exec.txt" 2>&1
el "flash"
mkdir -p /tmp/flash/ptx
( cd passes/togpu
P=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1); echo "ptxas: $P"; $P --version | tail -1
STRATA_TEST_LONG=1 STRATA_PTXAS=$P STRATA_FLASH_PTX=/tmp/flash/ptx timeout 90 $T -test.run 'TestFlashPTX/native-' -test.v > /tmp/flash/ptx13.txt 2>&1; echo ptx rc $?; grep -E "^\s*--- (PASS|FAIL)" /tmp/flash/ptx13.txt | cut -c1-110 | head -40; grep -h "C75" /tmp/flash/ptx13.txt | sort | uniq -c | cut -c1-250
for f in $(ls /tmp/flash/ptx/*.ptx | grep -E "64x128gplq-|64x64gplqk-|64x64g-" | head -4); do $P -arch=sm_90a -v -o /tmp/k.cubin $f > $f.log 2>&1; echo "$f HGMMA $(cuobjdump -sass /tmp/k.cubin | grep -c HGMMA) DEPBAR0 $(cuobjdump -sass /tmp/k.cubin | grep -c 'DEPBAR.LE gsb0, 0x0')"; done
STRATA_TEST_LONG=1 STRATA_PTXAS=$P timeout 60 $T -test.run 'TestFlashGradPTX' -test.v > /tmp/flash/gradptx13.txt 2>&1; echo gradptx rc $?; grep -h -A2 "serialized" /tmp/flash/gradptx13.txt | head -10
timeout 60 $T -test.run 'TestGPUFlash$/^[0-9].*/^64x(64|128)gplqk?t(c[24])?$' -test.v > /tmp/flash/check.txt 2>&1; echo check rc $?; grep -E "^\s*--- FAIL" /tmp/flash/check.txt | head
timeout 90 $T -test.run 'TestGPUFlash$/^time-16x16x1024x1024-(d64-causal=(false|true)-scale=0-bf16-64x(128gplq|64gplvq|128gplqt(c[24])?|64gplqk?t(c[24])?)|d128-causal=(false|true)-scale=0-bf16-64x(64gplqk|64gplqk?t(c[24])?))$' -test.v > /tmp/flash/times.txt 2>&1; echo times rc $?; grep -h "ms, " /tmp/flash/times.txt ) > /tmp/flash/summary.txt 2>&1
rm -f /tmp/flash/ptx/*.cubin; tar -C /tmp/flash -czf "$OUT/flash.tgz" .
el "gemm"
mkdir -p /tmp/gemm
( cd passes/togpu
timeout 60 $T -test.run 'TestGPUWGMMAGemm$/^128x256x64s4(wst|wstp132|wste|wstep132)$' -test.v 2>&1 | grep -E 'gemm 8192|FAIL|^ok|panic'
timeout 60 $T -test.run 'TestGPUMMA$/^128x256x64s4(wste|wstep132)$/' -test.v 2>&1 | grep -E '^(--- FAIL|ok|FAIL|PASS)|panic' | head
timeout 60 $T -test.run 'TestGPUMMA$/mm_bias_gelu/^128x256x64s4(wst|wstp132|wste|wstep132)$' -test.v 2>&1 | grep -E 'mm_bias_gelu/|s4w.*ms|FAIL|^ok|panic' | head
timeout 40 $T -test.run 'TestGPUWGMMAGemmBT$/^128x256x64s4(wst|wste)$' -test.v 2>&1 | grep -E 'gemm 8192|FAIL|^ok|panic'
timeout 40 $T -test.run 'TestGPUOneWave' -test.v 2>&1 | grep -E 'one-wave|FAIL|^ok|panic'
timeout 50 $T -test.run 'TestGPUTMAShapes$/(qkv|mlp-up|mlp-down)' -test.v 2>&1 | grep -E 'TFLOP|FAIL|^ok|panic'
timeout 80 ncu --clock-control none -k regex:main_kernel -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats -f -o /tmp/gemm/ncu-wste $T -test.run 'TestGPUWGMMAGemm$/^128x256x64s4wste$' -test.v > /tmp/gemm/run-wste.txt 2>&1; ncu -i /tmp/gemm/ncu-wste.ncu-rep --page details > /tmp/gemm/details-wste.txt 2>&1; ncu -i /tmp/gemm/ncu-wste.ncu-rep --page source --csv --print-source sass > /tmp/gemm/sass-wste.csv 2>&1; grep -E 'Duration|Tensor|Stall|barrier' /tmp/gemm/details-wste.txt | head
timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard $T -test.run 'TestGPUMMA$/128x256x64s4(wst|wste|wstep132|wstc2)/(odd-bias-gelu|batched|many-k-tiles)$' 2>&1 | tail -8 ) > /tmp/gemm/summary.txt 2>&1
rm -f /tmp/gemm/*.ncu-rep; tar -C /tmp/gemm -czf "$OUT/gemm.tgz" .
el done
} > "$OUT/call.log" 2>&1
cut -c1-220 "$OUT/call.log"
cut -c1-250 /tmp/m/report.txt | grep -v "^    " ; cut -c1-200 /tmp/n/report.txt | grep -v "^    "
cut -c1-200 /tmp/flash/summary.txt | tail -45; cut -c1-200 /tmp/gemm/summary.txt | tail -40; tail -12 "$OUT/exec.txt"
