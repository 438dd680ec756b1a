#!/usr/bin/env bash
# Session 14 call 1: torch.compile's (and eager's) per-kernel profiles of the model rows still behind,
# Strata's same-call profiles, resnet50_train host CPU profile, SDPA kernels of the attention rows.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
{
el "models"
mkdir -p /tmp/m && STRATA_TORCH_PROFILE=resnet50_infer,resnet50_train,gpt2_train,gpt2_prefill STRATA_TORCH_COMPILE=resnet50_infer,resnet50_train,gpt2_train,gpt2_prefill STRATA_LOGS=compile OUT=/tmp/m timeout 260 bash "$here/run-models-device.sh" --only resnet50_infer,resnet50_train,gpt2_train,gpt2_prefill --profile 1 > /tmp/m/run.log 2>&1; el "models rc $?"
el "cpu profile resnet50_train"
mkdir -p /tmp/m/cpu /tmp/cpudir && timeout 60 "$here/strata-models" run --only resnet50_train,gpt2_train --cpuprofile --iters 100 --out /tmp/cpudir > /tmp/m/cpu/run.log 2>&1; el "cpu rc $?"
cp /tmp/cpudir/*.pprof /tmp/m/cpu/ 2>/dev/null
el "attention torch"
timeout 90 python3 "$here/attn_profile.py" > /tmp/m/attn_torch.txt 2>&1; el "attn rc $?"
tar -C /tmp/m -czf "$OUT/m.tgz" .
el done
} > "$OUT/call.log" 2>&1
cat "$OUT/call.log"; grep -v "^    " /tmp/m/report.txt | cut -c1-330
