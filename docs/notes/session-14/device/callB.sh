#!/usr/bin/env bash
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
{
el sanitize
timeout 200 bash scripts/sanitize-device.sh --timeout 120 > "$OUT/sanitize.txt" 2>&1; el "sanitize rc $?"
ls /tmp/*sanit* -d 2>/dev/null
el conv
(cd runtime/autotune && timeout 150 ../../.device/runtime_autotune.test -test.run 'TestGPUConvVsCuDNN' -test.v > $OUT/conv-vs-cudnn.txt 2>&1; echo "conv rc $?")
(cd runtime/cudnn && timeout 80 ../../.device/runtime_cudnn.test -test.run 'TestGPUConvTiming' -test.v > $OUT/cudnn-timing.txt 2>&1; echo "cudnn rc $?")
el done
} > "$OUT/call.log" 2>&1
cat "$OUT/call.log"; tail -40 "$OUT/sanitize.txt" | cut -c1-220
grep -E "conv .*TFLOP|FAIL|^ok|^PASS" $OUT/conv-vs-cudnn.txt | cut -c1-220 | head -60
