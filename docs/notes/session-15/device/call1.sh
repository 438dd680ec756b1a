#!/usr/bin/env bash
# Session 15 call 1: torch.compile per-kernel profiles of the GPT-2 prefill/decode rows, first-call logs of the
# training rows, ncu of the flash forward (ours and cuDNN's), then the helpers' requests.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
el "models"
mkdir -p /tmp/m && STRATA_TORCH_PROFILE=gpt2_prefill,gpt2_decode,gpt2_decode_b8 STRATA_TORCH_COMPILE=gpt2_prefill,gpt2_decode,gpt2_decode_b8 STRATA_LOGS=compile OUT=/tmp/m timeout 230 bash "$here/run-models-device.sh" --only gpt2_prefill,gpt2_decode,gpt2_decode_b8,resnet50_train,gpt2_train,cnn_small_train --profile 1 > /tmp/m/run.log 2>&1; el "models rc $?"
tar -C /tmp/m -czf "$OUT/m.tgz" .
el "flash ncu"
mkdir -p /tmp/flash
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters"
( cd passes/togpu && for t in d64-causal=false-scale=0-bf16-64x128gplq d128-causal=false-scale=0-bf16-64x64gplqk; do
    timeout 70 ncu --clock-control none -k regex:flash --launch-skip 2 --launch-count 1 $SEC -f -o /tmp/flash/ours-$t "$here/passes_togpu.test" -test.run "TestGPUFlash\$/^time-16x16x1024x1024-$t\$" -test.v > /tmp/flash/run-ours-$t.txt 2>&1; echo "ours $t rc $?"
  done )
for d in 64 128; do
  D=$d timeout 70 ncu --clock-control none --target-processes all -k regex:sdpa --launch-skip 2 --launch-count 1 $SEC -f -o /tmp/flash/cudnn-d$d python3 "$here/sdpa_ncu.py" > /tmp/flash/run-cudnn-d$d.txt 2>&1; echo "cudnn d$d rc $?"
done
for r in /tmp/flash/*.ncu-rep; do b=${r%.ncu-rep}; ncu -i "$r" --page details > "$b.details.txt" 2>&1; ncu -i "$r" --page source --csv --print-source sass > "$b.sass.csv" 2>&1; done
rm -f /tmp/flash/*.ncu-rep; tar -C /tmp/flash -czf "$OUT/flash.tgz" .
el "flash done"
if [ -f "$here/requests1.sh" ]; then el "requests"; bash "$here/requests1.sh"; el "requests rc $?"; fi
el done
} > "$OUT/call.log" 2>&1
cat "$OUT/call.log" | cut -c1-300; grep -v "^    " /tmp/m/report.txt | cut -c1-330
