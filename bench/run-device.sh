#!/usr/bin/env bash
# Runs the whole benchmark suite on the GPU machine in one call: Strata's
# side (strata-bench prepare), PyTorch's side on the same .npy inputs
# (torch_side.py), then the comparison and the results file (strata-bench
# report). Build first on a machine with Go: scripts/build-device.sh; then
# give the device tool carry: [".device"] and the command
#
#	bash .device/run-device.sh [strata-bench prepare flags, e.g. --only softmax,rowsum]
#
# Results land under $OUT: results/<date>-h200.json (copy it to
# bench/results/ and run `make perf-doc`), the logs of each side, the
# manifests and the programs. Inputs and outputs (several GB) stay in a
# temporary directory that is removed at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/strata-bench-out}
mkdir -p "$OUT"
bin=$here/strata-bench
[ -x "$bin" ] || bin=$here/../.device/strata-bench
torch_side=$here/torch_side.py
data=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench.XXXXXX")
trap 'rm -rf "$data"' EXIT

# The card as found (never changed: METHOD.md).
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
	--format=csv > "$OUT/nvidia-smi.csv" 2>&1

status=0
echo "== strata-bench prepare" >&2
"$bin" prepare --out "$data" "$@" 2>&1 | tee "$OUT/prepare.log" || status=1
echo "== torch_side.py" >&2
python3 "$torch_side" "$data" 2>&1 | tee "$OUT/torch.log" || status=1
# At most 8 files come back from the device: the programs travel as one tar.
cp "$data"/prepare.json "$data"/torch.json "$OUT/" 2>/dev/null
tar -C "$data" -cf "$OUT/programs.tar" $(cd "$data" && ls *.mlir 2>/dev/null)
echo "== strata-bench report" >&2
"$bin" report --results "$OUT/results" "$data" 2>&1 | tee "$OUT/report.txt" || status=1
exit $status
