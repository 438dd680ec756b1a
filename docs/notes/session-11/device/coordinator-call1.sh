#!/usr/bin/env bash
# Session 11, coordinator's call 1: flash forward tilings, own GEMM, model rows
# (default and reduce-overhead, first-call logs, profiles), torch eager + decode reduce-overhead.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/smi.csv" 2>&1
t0=$(date +%s)
echo "== models default (fresh process, compile logs)" 
D=$(mktemp -d)
STRATA_LOGS=compile timeout 200 "$here/strata-models" run --out "$D" --iters 5 --profile 1 --only cnn_small_train,resnet50_infer,resnet50_train,gpt2_prefill,gpt2_train,gpt2_decode,gpt2_decode_b8 > "$OUT/models-default.log" 2>&1; echo "rc $? at $(( $(date +%s)-t0 )) s"
echo "== torch eager + decode reduce-overhead"
STRATA_TORCH_COMPILE=gpt2_decode,gpt2_decode_b8 timeout 200 python3 "$here/models_torch.py" "$D" > "$OUT/torch.log" 2>&1; echo "rc $? at $(( $(date +%s)-t0 )) s"
"$here/strata-models" report "$D" "$OUT/models-default.json" > "$OUT/report-default.txt" 2>&1
cp "$D"/*.profile.txt "$OUT/" 2>/dev/null; tar -C "$D" -cf "$OUT/profiles.tar" $(cd "$D" && ls *.profile.txt *.json 2>/dev/null); rm -f "$OUT"/*.profile.txt
rm -rf "$D"
echo "== models reduce-overhead"
D=$(mktemp -d)
STRATA_LOGS=cudagraphs timeout 150 "$here/strata-models" run --out "$D" --iters 5 --mode reduce-overhead --only cnn_small_train,resnet50_infer,resnet50_train,gpt2_prefill,gpt2_train > "$OUT/models-ro.log" 2>&1; echo "rc $? at $(( $(date +%s)-t0 )) s"
cp "$D"/models-strata.json "$OUT/models-ro-strata.json"; rm -rf "$D"
echo "== flash tilings"
timeout 150 "$here/togpu.test" -test.run 'TestGPUFlash$' -test.v > "$OUT/flash.log" 2>&1; echo "rc $? at $(( $(date +%s)-t0 )) s"
echo "== gemm"
timeout 60 "$here/togpu.test" -test.run 'TestGPUWGMMAGemm' -test.v > "$OUT/gemm.log" 2>&1; echo "rc $? at $(( $(date +%s)-t0 )) s"
grep -h "ms\b\|TFLOP\|FAIL\|ok " "$OUT/flash.log" "$OUT/gemm.log" | tail -80
cat "$OUT/report-default.txt" | tail -40
