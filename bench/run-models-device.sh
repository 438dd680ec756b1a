#!/usr/bin/env bash
# Runs the model rows (issues 20 and 21) on the GPU machine in one call:
# Strata's side (strata-models run, in a fresh process with empty compile
# caches), PyTorch's side on the same weights and inputs (models_torch.py:
# eager, and torch.compile for the rows STRATA_TORCH_COMPILE lists — unset:
# all, "none": none), then the comparison (strata-models report). Build
# first on a machine with Go: scripts/build-device.sh; then give the device
# tool carry: [".device"] and the command
#
#	bash .device/run-models-device.sh [strata-models run flags, e.g. --only cnn_small_train --mode reduce-overhead --profile 1]
#
# Results land under $OUT: models.json (the suite's results format),
# report.txt, the logs of both sides and each row's device profile when
# --profile is given. Weights, inputs and outputs stay in a temporary
# directory that is removed at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/strata-models-out}
mkdir -p "$OUT"
bin=$here/strata-models
dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-models.XXXXXX")
trap 'rm -rf "$dir"' EXIT

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
	--format=csv > "$OUT/nvidia-smi.csv" 2>&1

status=0
echo "== strata-models run" >&2
STRATA_LOGS=${STRATA_LOGS:-compile} "$bin" run --out "$dir" "$@" > "$OUT/strata.log" 2>&1 || status=1
echo "== models_torch.py" >&2
python3 "$here/models_torch.py" "$dir" > "$OUT/torch.log" 2>&1 || status=1
echo "== strata-models report" >&2
"$bin" report "$dir" "$OUT/models.json" > "$OUT/report.txt" 2>&1 || status=1
cp "$dir"/*profile.txt "$OUT/" 2>/dev/null
cat "$OUT/report.txt"
exit $status
