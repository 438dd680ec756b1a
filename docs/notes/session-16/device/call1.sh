#!/usr/bin/env bash
# Session 16 call 1: session 15's unrun requests (first-call A/B cold, flash r/o candidates, decode b8 nsys + sweeps, scatter sanitizer).
set -uo pipefail
R0=$(pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; C=/tmp/c1; rm -rf $C; mkdir -p $C/{first,flash,decode,embed}
t0=$(date +%s); el() { echo "[$(( $(date +%s)-t0 )) s] $*"; }
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
el first
(ls -l /usr/local/cuda*/bin/ptxas; which ptxas; ptxas --version) > $C/first/ptxas.txt 2>&1
for job in resnet50_train:default: resnet50_train:tierO1:link,tier=O1 resnet50_train:ptxas:link,ptxas \
           gpt2_train:default: gpt2_train:tierO1:link,tier=O1 gpt2_train:ptxas:link,ptxas; do
  r=${job%%:*}; rest=${job#*:}; tag=${rest%%:*}; pol=${rest#*:}; d=$(mktemp -d); c=$(mktemp -d)
  CUDA_CACHE_PATH=$c STRATA_PTX_LOAD=$pol STRATA_LOGS=compile,perf_hints timeout 60 .device/strata-models run \
    --out $d --only $r --iters 2 > $C/first/$r-$tag.log 2>&1; echo "$job rc $?"; rm -rf $d $c
done
el flash
cd passes/togpu; T=$R0/.device/passes_togpu.test; F=$C/flash/flash.txt
timeout 40 $T -test.run 'TestGPUFlash$/^(2x1x200x130-d64|1x2x130x70-d64|1x1x130x200-d128|1x2x150x140-d128)/.*(o|r396|r528)$' -test.v > $C/flash/fcheck.txt 2>&1; echo "check rc $? pass $(grep -cE '^\s*--- PASS' $C/flash/fcheck.txt)" >> $F; grep -E "^\s*--- FAIL|panic" $C/flash/fcheck.txt | head >> $F
timeout 60 $T -test.run 'TestGPUFlash$/^time-16x16x1024x1024-d(64-causal=false-scale=0-bf16-64x128gplqo?(r396)?|64-causal=true-scale=0-bf16-64x64gplvqo?(r528)?|128-causal=(false|true)-scale=0-bf16-64x64gplqko?(r396)?)$' -test.v > $C/flash/ftimes.txt 2>&1; echo "times rc $?" >> $F; grep -E "=== RUN|ms, " $C/flash/ftimes.txt | grep -o "time-.*\|[0-9.]* ms" | paste - - | cut -c1-110 >> $F
timeout 40 $T -test.run 'TestGPUFlashLarge/^16x16x1024x1024.*/.*(o|r396|r528)$' -test.v > $C/flash/flarge.txt 2>&1; echo "large rc $? pass $(grep -cE '^\s*--- PASS' $C/flash/flarge.txt)" >> $F; grep -E "^\s*--- FAIL|differ" $C/flash/flarge.txt | head -5 >> $F
cat $F
el embed
timeout 40 $T -test.run 'TestGPUScatterAdd|TestGPUGatherOutOfRange' -test.v > $C/embed/scatter.txt 2>&1; echo "scatter rc $?"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
timeout 60 $CS --tool memcheck $T -test.run 'TestGPUScatterAdd' > $C/embed/memcheck.txt 2>&1; echo "memcheck rc $?"; tail -3 $C/embed/memcheck.txt
el decode
STRATA_DECODE_ATTN=1 timeout 40 $T -test.run TestGPUDecodeAttention -test.v > $C/decode/attn.txt 2>&1; echo "decattn rc $?"
STRATA_ROW_SWEEP=gpt2 timeout 40 $T -test.run TestGPURowVariants -test.v > $C/decode/rows.txt 2>&1; echo "rows rc $?"
cd $R0
N=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1); echo "nsys: $N" > $C/decode/nsys.txt
d=$(mktemp -d); [ -n "$N" ] && timeout 60 $N profile --cuda-graph-trace=node -o $d/dec8 --force-overwrite true \
  .device/strata-models run --out $d/o --only gpt2_decode_b8 --iters 4 >> $C/decode/nsys.txt 2>&1 && \
  timeout 30 $N stats -r cuda_gpu_kern_sum --format csv $d/dec8.nsys-rep > $C/decode/dec8-kern.csv 2>> $C/decode/nsys.txt; echo "nsys rc $?"; rm -rf $d
el done
} > $C/call.log 2>&1
tar -C $C -czf $OUT/c1.tgz .
cat $C/call.log | cut -c1-200
