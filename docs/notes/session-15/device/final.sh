#!/usr/bin/env bash
# Session 15 final call: every model row vs torch eager and torch.compile (fresh JIT cache), then the attention rows.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=/tmp/fin; rm -rf $R; mkdir -p $R/m
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
el models
CUDA_CACHE_PATH=$(mktemp -d) STRATA_LOGS=compile OUT=$R/m timeout 330 bash "$here/run-models-device.sh" --profile 1 > $R/m/run.log 2>&1; el "models rc $?"
el attention
timeout 150 bash "$here/run-device.sh" --only attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128 --rep-ms 100 > $R/attn.txt 2>&1; el "attn rc $?"
el done
} > $R/call.log 2>&1
tar -C $R -czf $OUT/fin.tgz .
cat $R/call.log | cut -c1-250; grep -v "^    " $R/m/report.txt | cut -c1-330; grep "^| \`attention" $R/attn.txt
