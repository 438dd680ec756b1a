#!/usr/bin/env bash
# Session 13 call 3 (main 6399e49): acc+gpt models (f64, profile), gpt cpuprofile, r50t ro A/B, NCHW bisect, flash, gemm.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
T=$here/passes_togpu.test
{
el "flash"
mkdir -p /tmp/flash
( cd passes/togpu
timeout 60 $T -test.run 'TestGPUFlash$/^[0-9].*/^(64x(128gplq|64gplvq|64gplqk|128gplqt|64gplqkt)(c2)?|128x(64|128)gplqda?)$' -test.v > /tmp/flash/check.txt 2>&1; echo check rc $?; grep -cE "^\s*--- PASS" /tmp/flash/check.txt; grep -E "^\s*--- FAIL" /tmp/flash/check.txt | head
timeout 80 $T -test.run 'TestGPUFlash$/^time-16x16x1024x1024-(d64-causal=(false|true)-scale=0-bf16-(64x128gplq|64x64gplvq|64x64gplq|64x128gplqt(c2)?|64x64gplqt(c2)?|64x64gplqkt|128x64gplvq|128x(64|128)gplqda?)|d128-causal=(false|true)-scale=0-bf16-(64x64gplqk|64x64gplq|64x64gplvq|64x64gplqk?t(c2)?|128x64gplvq|128x(64|128)gplqda?))$' -test.v > /tmp/flash/times.txt 2>&1; echo times rc $?; grep -E "=== RUN|ms, " /tmp/flash/times.txt | grep -o "time-.*\|[0-9.]* ms" | paste - - | cut -c1-120
t=d128-causal=false-scale=0-bf16-64x64gplqk; timeout 60 ncu --clock-control none -k regex:flash --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters -f -o /tmp/flash/ncu-$t $T -test.run "TestGPUFlash\$/^time-16x16x1024x1024-$t\$" > /dev/null 2>&1; ncu -i /tmp/flash/ncu-$t.ncu-rep --page source --csv --print-source sass > /tmp/flash/ncu-sass.csv 2>&1; echo "HGMMA $(grep -c HGMMA /tmp/flash/ncu-sass.csv) DEPBAR0 $(grep -c 'DEPBAR.LE gsb0, 0x0' /tmp/flash/ncu-sass.csv)"; rm -f /tmp/flash/*.ncu-rep ) > /tmp/flash/summary.txt 2>&1
tar -C /tmp/flash -czf "$OUT/flash.tgz" .
el "gemm"
( cd passes/togpu
timeout 60 $T -test.run 'TestGPUWGMMAGemm$/^128x256x64s4(wst|wste|wstep132|wstc2p132)$' -test.v 2>&1 | grep -E 'gemm 8192|FAIL|^ok|panic'
timeout 60 $T -test.run 'TestGPUOneWave|TestGPUTMAShapes$/(qkv|mlp-up|mlp-down)' -test.v 2>&1 | grep -E 'TFLOP|FAIL|^ok|panic'
timeout 40 $T -test.run 'TestGPUMMA$/mm_bias_gelu/^128x256x64s4(wste|wstep132)$' -test.v 2>&1 | grep -E 's4w.*ms|FAIL|^ok|panic'
timeout 90 $T -test.run 'TestGPUTMAGraph|TestGPUClusterShapes|TestGPUMMA$/^128x256x64s4(wste|wstep132|wstc2p132)$/' -test.v 2>&1 | grep -E '^(--- FAIL|ok|FAIL|PASS)|panic' | head ) > "$OUT/gemm.txt" 2>&1
el "models (acc, gpt)"
mkdir -p /tmp/m && STRATA_LOGS=compile STRATA_TORCH_F64=1 STRATA_TORCH_COMPILE=none OUT=/tmp/m timeout 200 bash "$here/run-models-device.sh" --only cnn_small_train,resnet50_infer,gpt2_train,gpt2_dynamic,gpt2_decode_b8,gpt2_decode --profile 1 > /tmp/m/run.log 2>&1; el "models rc $?"
tar -C /tmp/m -czf "$OUT/models.tgz" .
el "gpt cpuprofile"
mkdir -p /tmp/dyn && timeout 60 "$here/strata-models" run --out /tmp/gptdyn --only gpt2_dynamic --cpuprofile > /tmp/dyn/run.log 2>&1; cp /tmp/gptdyn/*.pprof /tmp/dyn/ 2>/dev/null; tar -C /tmp/dyn -czf "$OUT/dyn.tgz" .
el "r50t ro A/B"
mkdir -p /tmp/ro /tmp/ron
STRATA_TORCH_COMPILE=none OUT=/tmp/ro timeout 90 bash "$here/run-models-device.sh" --only resnet50_train --mode reduce-overhead > /tmp/ro/run.log 2>&1; el "ro rc $?"
STRATA_CHANNELS_LAST=off STRATA_TORCH_COMPILE=none OUT=/tmp/ron timeout 90 bash "$here/run-models-device.sh" --only resnet50_train --mode reduce-overhead > /tmp/ron/run.log 2>&1; el "ro nchw rc $?"
tar -czf "$OUT/r50t.tgz" -C /tmp ro ron
el "bisect NCHW"
for b in no7d0458c no4a27765; do mkdir -p /tmp/$b/bin /tmp/$b/out; gunzip -c "$here/sm-$b.gz" > /tmp/$b/bin/strata-models; chmod +x /tmp/$b/bin/strata-models; cp "$here/run-models-device.sh" "$here/models_torch.py" /tmp/$b/bin/
  STRATA_CHANNELS_LAST=off STRATA_TORCH_COMPILE=none OUT=/tmp/$b/out timeout 80 bash /tmp/$b/bin/run-models-device.sh --only resnet50_train > /tmp/$b/out/run.log 2>&1; el "$b rc $?"; grep -E "^resnet|stem.bn.running" /tmp/$b/out/report.txt | cut -c1-200; done
tar -czf "$OUT/bisect.tgz" -C /tmp no7d0458c/out no4a27765/out
el done
} > "$OUT/call.log" 2>&1
cut -c1-220 "$OUT/call.log"
grep -v "^    " /tmp/m/report.txt | cut -c1-250; grep -E "^resnet|stem.bn.running" /tmp/ro/report.txt /tmp/ron/report.txt | cut -c1-250
tail -30 "$OUT/gemm.txt"
