#!/usr/bin/env bash
# Build device binaries from /work/main into .device, pack them into .dc/bins.tgz (carry .dc).
set -euo pipefail
cd /work/main; export PATH=/usr/local/go/bin:$PATH; [ -f .cache/tools/env.sh ] && source .cache/tools/env.sh || true
rm -rf .device .dc; mkdir -p .dc
bash scripts/build-device.sh --bench-only >/tmp/build-dev.log 2>&1
for p in "$@"; do go test -c -ldflags "-s -w" -o .device/$(echo $p | tr / _).test ./$p; done
tar -C .device -cf - . | gzip -1 > .dc/bins.tgz
ls -la .device .dc; git log --oneline -1
