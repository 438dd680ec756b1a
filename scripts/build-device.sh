#!/usr/bin/env bash
# Builds everything the GPU machine runs into .device/ (ignored by git): the
# GPU test binaries and irc (scripts/device-tests.sh, when present) and the
# benchmark suite (strata-bench, torch_side.py, run-device.sh) and the model
# rows (strata-models, models_torch.py, run-models-device.sh). The device
# has no Go, so everything is built here. Run from anywhere in the
# repository, then give the device tool carry: [".device"] and the command
# printed last.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH
cd "$(dirname "$0")/.."

mkdir -p .device
grep -qxF '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
if [ "${1:-}" != "--bench-only" ] && [ -x scripts/device-tests.sh ]; then
	scripts/device-tests.sh
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- bench 2>/dev/null)" ]; then
	commit="$commit+dirty"
fi
# purego loads libcuda at run time: no cgo needed, and the binary runs on
# the device's glibc.
CGO_ENABLED=0 go build -ldflags "-s -w -X main.commit=$commit" -o .device/strata-bench ./bench/cmd/strata-bench
CGO_ENABLED=0 go build -ldflags "-s -w" -o .device/strata-models ./bench/cmd/strata-models
# The commit the binaries come from, for the reports run beside them
# (scripts/sanitize-device.sh): the device's copy of the tree is another
# checkout, whose HEAD says nothing about them.
c=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || c="$c+dirty"
echo "$c" > .device/commit
cp bench/torch_side.py bench/run-device.sh bench/models_torch.py bench/run-models-device.sh .device/

cat <<'RUN'
Kernel rows (device tool, carry: [".device"]):
bash .device/run-device.sh
Model rows (same carry):
bash .device/run-models-device.sh [--only ROWS] [--mode reduce-overhead] [--profile 1]
RUN
