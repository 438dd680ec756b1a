#!/usr/bin/env bash
# Session 15 call 2 (≈ 00:00): the helpers' first requests (fix, bn, decode, first, flash) + the coordinator's GPT-2 rows.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
tar -C "$here" -xJf "$here/bins.tar.xz"
if [ "${PART:-a}" = a ]; then
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
el "fix"
mkdir -p $OUT/fix
( cd passes/togpu && timeout 90 ../../.device/passes_togpu.test -test.run 'TestGPUMMADynamic|TestGPUMMA$' -test.v 2>&1 | grep -E 'FAIL|ok|PASS|largest|out of bounds|element' | tail -150 > $OUT/fix/mma.txt ); el "fix rc $?"
el "decode 1"
mkdir -p $OUT/decode
( cd runtime/exec && timeout 60 ../../.device/runtime_exec.test -test.run 'TestGPURunnerUpdatesInPlace|TestGPUTwinGraphs|TestGPUGraphChainInPlace|TestGPURunnerDonation' -test.v 2>&1 | tail -30 > $OUT/decode/exec.txt ); el "decode1 rc $?"
el "decode 2"
d=$(mktemp -d); STRATA_LOGS=compile timeout 90 .device/strata-models run --out $d --only gpt2_decode,gpt2_decode_b8 --decode-mode default --iters 4 --profile 1 > $OUT/decode/decode-default.log 2>&1; el "decode2 rc $?"
for f in $d/*.profile.txt; do cp $f $OUT/decode/$(basename $f .profile.txt).default-profile.txt; done; rm -rf $d
el "decode 3"
( cd passes/togpu && STRATA_ROW_SWEEP=gpt2 timeout 60 ../../.device/passes_togpu.test -test.run TestGPURowVariants -test.v 2>&1 | grep -E "TIME|FAIL|ok|PASS" | tail -20 > $OUT/decode/rows.txt ); el "decode3 rc $?"
( cd runtime/cublaslt && STRATA_CUBLASLT_ALGOS=gpt2 timeout 60 ../../.device/runtime_cublaslt.test -test.run TestGPUHeuristicAlgorithms -test.v 2>&1 | grep -E "ALGO|FAIL|ok|PASS" | tail -100 > $OUT/decode/algos.txt ); el "decode4 rc $?"
el "models (decode rows, prefill, resnet50_infer: Strata only)"
mkdir -p /tmp/m && STRATA_LOGS=compile STRATA_TORCH_COMPILE=gpt2_decode,gpt2_decode_b8,gpt2_prefill OUT=/tmp/m timeout 200 bash "$here/run-models-device.sh" --only gpt2_decode,gpt2_decode_b8,gpt2_prefill,resnet50_infer --profile 1 > /tmp/m/run.log 2>&1; el "models rc $?"
tar -C /tmp/m -czf "$OUT/m.tgz" .
el "bn ncu"
mkdir -p $OUT/bn; NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1); d=$(mktemp -d)
timeout 60 $NCU -k 'regex:^graph0_kernel_(4|5|11|14)$' -c 4 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats .device/strata-models run --out $d --only resnet50_infer --iters 1 > $OUT/bn/ncu-r50i-bn.txt 2>&1; el "bn rc $?"; rm -rf $d
el "part a done"
} > "$OUT/call.log" 2>&1
fi
if [ "${PART:-a}" = b ]; then
{
el "first"
mkdir -p $OUT/first
for r in cnn_small_train resnet50_train gpt2_train; do d=$(mktemp -d); STRATA_LOGS=compile,pass_timing timeout 60 .device/strata-models run --out $d --only $r --iters 2 > $OUT/first/first-$r.log 2>&1; rm -rf $d; done
for r in cnn_small_train resnet50_train gpt2_train; do d=$(mktemp -d); STRATA_PTX_LOAD=link,tier=O1 STRATA_LOGS=compile timeout 60 .device/strata-models run --out $d --only $r --iters 2 > $OUT/first/first-$r-tierO1.log 2>&1; rm -rf $d; done
(cd optim && timeout 60 ../.device/optim.test -test.run GPU -test.v > $OUT/first/first-optim-gpu.log 2>&1)
(cd frontend && timeout 60 ../.device/frontend.test -test.run 'TestGPUCompileLog|TestGPUDeviceTensors' -test.v > $OUT/first/first-frontend-gpu.log 2>&1)
el "first done"
el "flash"
mkdir -p $OUT/flash && cd passes/togpu && T=../../.device/passes_togpu.test
timeout 60 $T -test.run 'TestGPUFlash$/^(2x1x200x130-d64|1x2x130x70-d64|1x1x130x200-d128|1x2x150x140-d128|1x1x40x200-d128-causal=false-scale=4-f16|1x1x33x70-d80|1x1x130x200-d48-causal=false-scale=0-f16)' -test.v > $OUT/flash/check.txt 2>&1; echo check rc $?; grep -cE "^\s*--- PASS" $OUT/flash/check.txt; grep -E "^\s*--- FAIL|panic" $OUT/flash/check.txt | head
timeout 60 $T -test.run 'TestGPUFlash$/^time-16x16x1024x1024-d(64-causal=false-scale=0-bf16-64x128gplq|64-causal=true-scale=0-bf16-64x64gplvq|128-causal=(false|true)-scale=0-bf16-64x64gplqk)$' -test.v > $OUT/flash/times.txt 2>&1; echo times rc $?; grep -E "=== RUN|ms, " $OUT/flash/times.txt | grep -o "time-.*\|[0-9.]* ms" | paste - - | cut -c1-110
cd ../..
timeout 120 bash .device/run-device.sh --only attention,attention_d128,attention_causal,attention_causal_d128 --rep-ms 100 > $OUT/flash/rows.txt 2>&1; echo rows rc $?; grep -E "attention" $OUT/flash/rows.txt | tail -8
el done
} > "$OUT/call.log" 2>&1
fi
cat "$OUT/call.log" | cut -c1-300; [ -f /tmp/m/report.txt ] && grep -v "^    " /tmp/m/report.txt | cut -c1-330
