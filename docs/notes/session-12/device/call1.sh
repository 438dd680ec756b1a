#!/usr/bin/env bash
# Session 12, coordinator's call 1: every model row (default mode, profiles, torch eager + torch.compile
# same call), reduce-overhead Strata side for the training rows, TMA under graph capture.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
echo "== models default + torch"
OUT=$OUT timeout 430 bash "$here/run-models-device.sh" --profile 1 > "$OUT/models-run.log" 2>&1; echo "models rc $? at $(( $(date +%s)-t0 )) s"
tar -C "$OUT" -cf "$OUT/profiles.tar" $(cd "$OUT" && ls *.profile.txt 2>/dev/null) && rm -f "$OUT"/*.profile.txt
echo "== ro strata only"
D=$(mktemp -d)
STRATA_LOGS=cudagraphs timeout 100 "$here/strata-models" run --out "$D" --mode reduce-overhead --only cnn_small_train,resnet50_train,gpt2_train,gpt2_prefill > "$OUT/models-ro.log" 2>&1; echo "ro rc $? at $(( $(date +%s)-t0 )) s"
cp "$D"/models-strata.json "$OUT/models-ro-strata.json"; rm -rf "$D"
echo "== tma graph"
timeout 40 "$here/togpu.test" -test.run 'TestGPUTMAGraph' -test.v > "$OUT/tmagraph.log" 2>&1; echo "tma rc $? at $(( $(date +%s)-t0 )) s"
tail -5 "$OUT/tmagraph.log"
tail -45 "$OUT/report.txt"
grep -h "a call\|a step\|ms/step\|first call" "$OUT/models-ro.log" | head -20
