#!/usr/bin/env bash
# Session 16 final call: every model row vs torch eager and torch.compile (fresh JIT cache), then attention and GEMM rows.
set -uo pipefail
R0=$(pwd); mkdir -p .device && tar -xzf .dc/bins.tgz -C .device
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=/tmp/fin; rm -rf $R; mkdir -p $R/m
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
el models
CUDA_CACHE_PATH=$(mktemp -d) STRATA_LOGS=compile OUT=$R/m timeout 330 bash .device/run-models-device.sh --profile 1 > $R/m/run.log 2>&1; el "models rc $?"
el attention
timeout 170 bash .device/run-device.sh --only attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128 --rep-ms 100 > $R/attn.txt 2>&1; el "attn rc $?"
left=$(( 570 - ($(date +%s)-t0) )); [ $left -gt 60 ] && left=60
timeout $left bash .device/run-device.sh --only gemm_own_bf16,mm_bias_gelu --rep-ms 100 > $R/gemm.txt 2>&1; el "gemm rc $?"
el done
} > $R/call.log 2>&1
tar -C $R -czf $OUT/fin.tgz .
cat $R/call.log | cut -c1-250; grep -v "^    " $R/m/report.txt | cut -c1-330; grep -E "^\| \`(attention|gemm|mm_)" $R/attn.txt $R/gemm.txt
