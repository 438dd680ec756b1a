#!/usr/bin/env bash
# Session 13 final call: all model rows vs torch eager + torch.compile (same call), gemm_own vs cuBLASLt (test),
# NCHW resnet50_train A/B, attention kernel rows vs torch (time left).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
T=$here/passes_togpu.test
{
el "models"
mkdir -p /tmp/m && STRATA_LOGS=compile OUT=/tmp/m timeout 340 bash "$here/run-models-device.sh" --profile 1 > /tmp/m/run.log 2>&1; el "models rc $?"
tar -C /tmp/m -czf "$OUT/models.tgz" .
el "gemm"
( cd passes/togpu
timeout 40 $T -test.run 'TestGPUWGMMAGemm$/^128x256x64s4(wst|wste|wstep132)$' -test.v 2>&1 | grep -E 'gemm 8192|FAIL|^ok|panic'
timeout 30 $T -test.run 'TestGPUMMA$/mm_bias_gelu/^128x256x64s4(wste|wstep132)$' -test.v 2>&1 | grep -E 's4w.*ms|FAIL|^ok|panic'
echo "== flash candidates d128"
timeout 25 $T -test.run 'TestGPUFlash$/^time-16x16x1024x1024-d128-causal=(false|true)-scale=0-bf16-(64x128gplqk|64x64gplqk|128x128gplqdt?)$' -test.v 2>&1 | grep -E "=== RUN|ms, |FAIL" | grep -o "time-.*\|[0-9.]* ms\|FAIL.*" | paste - - ) > "$OUT/gemm.txt" 2>&1
el "nchw"
mkdir -p /tmp/n && STRATA_CHANNELS_LAST=off STRATA_TORCH_COMPILE=none OUT=/tmp/n timeout 60 bash "$here/run-models-device.sh" --only resnet50_train > /tmp/n/run.log 2>&1; el "nchw rc $?"
tar -C /tmp/n -czf "$OUT/nchw.tgz" .
left=$(( 470 - ($(date +%s)-t0) ))
el "kernel rows, $left s"
if [ $left -gt 60 ]; then
mkdir -p /tmp/kr && OUT=/tmp/kr timeout $left bash "$here/run-device.sh" --only attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128 --default-only attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128 --rep-ms 100 > /tmp/kr/run.log 2>&1; el "kernel rows rc $?"
rm -f /tmp/kr/programs.tar; tar -C /tmp/kr -czf "$OUT/kr.tgz" .
fi
el done
} > "$OUT/call.log" 2>&1
cut -c1-200 "$OUT/call.log"
grep -v "^    " /tmp/m/report.txt | cut -c1-330; grep -v "^    " /tmp/n/report.txt | cut -c1-250
cat "$OUT/gemm.txt"; cat /tmp/kr/report.txt 2>/dev/null | cut -c1-250 | head -30
