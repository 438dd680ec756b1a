#!/usr/bin/env bash
# Session 14 final call: every model row vs torch eager + torch.compile (same call) with per-kernel profiles,
# the flash backward's device checks, the attention kernel rows vs torch.compile.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
T=$here/passes_togpu.test
{
el "models"
mkdir -p /tmp/m && STRATA_TORCH_PROFILE=resnet50_infer,resnet50_train,gpt2_train STRATA_LOGS=compile OUT=/tmp/m timeout 290 bash "$here/run-models-device.sh" --profile 1 > /tmp/m/run.log 2>&1; el "models rc $?"
tar -C /tmp/m -czf "$OUT/models.tgz" .
el "flash checks"
( cd passes/togpu
timeout 50 $T -test.run 'TestGPUFlashGrad$/^check-' -test.v 2>&1 | grep -E "^\s*--- (PASS|FAIL)|FAIL|panic|rror" | cut -c1-200 | sort | uniq -c | head -40 ) > "$OUT/flashcheck.txt" 2>&1
el "flash checks done"
left=$(( 560 - ($(date +%s)-t0) ))
el "kernel rows, $left s"
if [ $left -gt 60 ]; then
R=attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128
mkdir -p /tmp/kr && OUT=/tmp/kr timeout $left bash "$here/run-device.sh" --only $R --default-only $R --rep-ms 100 > /tmp/kr/run.log 2>&1; el "kernel rows rc $?"
rm -f /tmp/kr/programs.tar; tar -C /tmp/kr -czf "$OUT/kr.tgz" .
fi
el done
} > "$OUT/call.log" 2>&1
cut -c1-200 "$OUT/call.log"
grep -v "^    " /tmp/m/report.txt | cut -c1-330
cat "$OUT/flashcheck.txt"; cat /tmp/kr/report.txt 2>/dev/null | cut -c1-250 | head -30
