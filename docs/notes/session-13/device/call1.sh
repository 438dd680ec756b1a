#!/usr/bin/env bash
# Session 13 call 1 (main f96a671): acc per-output checks (f64), gemm cnn first call + ncu, flash ncu, kernel rows vs torch.compile, TestGPUConv.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
{
el "acc"
mkdir -p /tmp/acc && STRATA_TORCH_F64=1 STRATA_TORCH_COMPILE=none OUT=/tmp/acc timeout 150 bash "$here/run-models-device.sh" --only gpt2_train,gpt2_decode_b8,gpt2_dynamic,resnet50_train > /tmp/acc/run.log 2>&1; el "acc rc $?"
tar -C /tmp/acc -cf "$OUT/acc.tar" . 
el "gemm cnn first call"
export CUDA_CACHE_PATH=$(mktemp -d); mkdir -p /tmp/cnn && STRATA_TORCH_COMPILE=none OUT=/tmp/cnn timeout 60 bash "$here/run-models-device.sh" --only cnn_small_train > /tmp/cnn/run.log 2>&1; el "cnn rc $?"; cat /tmp/cnn/report.txt; unset CUDA_CACHE_PATH
tar -C /tmp/cnn -cf "$OUT/cnn.tar" .
el "gemm ncu"
mkdir -p /tmp/gemm
( cd passes/togpu && timeout 60 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis -k regex:main_kernel -c 1 "$here/passes_togpu.test" -test.run 'TestGPUWGMMAGemm$/^128x256x64s4wst$' -test.v > /tmp/gemm/ncu-wst.txt 2>&1; tail -3 /tmp/gemm/ncu-wst.txt
  timeout 60 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis -k regex:'nvjet|gemm|xmma|cutlass' -c 1 "$here/passes_togpu.test" -test.run 'TestGPUWGMMAGemm$/^none$' -test.v > /tmp/gemm/ncu-cublaslt.txt 2>&1; tail -3 /tmp/gemm/ncu-cublaslt.txt
  timeout 60 "$here/passes_togpu.test" -test.run 'TestGPUConv$' -test.v > /tmp/gemm/conv.txt 2>&1; grep -E '^(--- |ok|FAIL|PASS)|panic' /tmp/gemm/conv.txt | head -30 )
tar -C /tmp/gemm -cf "$OUT/gemm.tar" .
el "flash ncu"
mkdir -p /tmp/flash
( cd passes/togpu && for t in d128-causal=false-scale=0-bf16-64x64gplqk d64-causal=false-scale=0-bf16-64x128gplq d128-causal=false-scale=0-bf16-128x128gplqd; do timeout 80 ncu --clock-control none -k regex:flash --launch-skip 2 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters -f -o /tmp/flash/ncu-$t "$here/passes_togpu.test" -test.run "TestGPUFlash\$/^time-16x16x1024x1024-$t\$" -test.v > /tmp/flash/run-$t.txt 2>&1; echo "$t rc $?"; ncu -i /tmp/flash/ncu-$t.ncu-rep --page details > /tmp/flash/details-$t.txt 2>&1; ncu -i /tmp/flash/ncu-$t.ncu-rep --page source --csv --print-source sass > /tmp/flash/sass-$t.csv 2>&1; done )
rm -f /tmp/flash/*.ncu-rep; tar -C /tmp/flash -czf "$OUT/flash.tgz" .
el "kernel rows"
mkdir -p /tmp/kr && OUT=/tmp/kr timeout 200 bash "$here/run-device.sh" --only attention,attention_d128,attention_causal,attention_causal_d128,attention_train,attention_train_d128,gemm_own_bf16 > /tmp/kr/run.log 2>&1; el "kernel rows rc $?"
rm -f /tmp/kr/programs.tar; tar -C /tmp/kr -cf "$OUT/kr.tar" .
el done
} > "$OUT/call.log" 2>&1
cat "$OUT/call.log" | cut -c1-250 | tail -60
cat /tmp/kr/report.txt 2>/dev/null | cut -c1-250
cat /tmp/acc/report.txt 2>/dev/null | cut -c1-200 | head -40
