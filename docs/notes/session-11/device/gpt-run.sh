#!/usr/bin/env bash
# Session 11, helper gpt: GPT-2 rows' device time after the fusion changes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s)
D=$(mktemp -d)
STRATA_LOGS=compile timeout 100 "$here/strata-models" run --out "$D" --iters 5 --profile 1 --only gpt2_prefill,gpt2_train,gpt2_decode_b8 > "$OUT/models.log" 2>&1; echo "strata rc $? at $(( $(date +%s)-t0 )) s"
STRATA_TORCH_COMPILE=none timeout 45 python3 bench/models_torch.py "$D" > "$OUT/torch.log" 2>&1; echo "torch rc $? at $(( $(date +%s)-t0 )) s"
"$here/strata-models" report "$D" "$OUT/models.json" > "$OUT/report.txt" 2>&1
cp "$D"/*.profile.txt "$OUT/" 2>/dev/null
grep -h "a call\|a step\|ms/step\|kernels\|max_scaled\|ok=" "$OUT/models.log" | head -30
head -8 "$OUT"/gpt2_prefill.profile.txt "$OUT"/gpt2_train.profile.txt 2>/dev/null
tail -30 "$OUT/report.txt"
