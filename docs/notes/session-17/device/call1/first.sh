mkdir -p $OUT/first; F=$OUT/first
P=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas); CO=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
W=$(mktemp -d); mkdir -p $W/cap $W/link
printf '%s\n' '#!/bin/bash' 'REAL "$@"; rc=$?' 'd=CAP/$(date +%s%N)-$$; mkdir -p $d; prev=' \
  'for a in "$@"; do case $a in *.ptx) cp "$a" $d/;; esac; [ "$prev" = -o ] && cp "$a" $d/out.cubin; prev=$a; done' \
  'exit $rc' > $W/ptxas
sed -i "s#REAL#$P#; s#CAP#$W/cap#" $W/ptxas; chmod +x $W/ptxas
"$P" --version > $F/ptxas-version.txt 2>&1; nvidia-smi >> $F/ptxas-version.txt 2>&1
n=0
for job in ptxas default default ptxas ptxas default; do
  n=$((n+1)); d=$(mktemp -d); c=$(mktemp -d); pol=; [ $job = ptxas ] && pol=link,ptxas
  wrap=; [ $n = 1 ] && wrap=$W/ptxas
  { echo "== $n $job $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    timeout 5 nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader; } >> $F/smi.txt 2>&1
  env CUDA_CACHE_PATH=$c STRATA_PTX_LOAD=$pol ${wrap:+STRATA_PTXAS=$wrap} STRATA_LOGS=compile,perf_hints,autotune,time \
    timeout 60 .device/strata-models run --out $d --only resnet50_train --iters 20 --profile 3 > $F/r50t-$n-$job.log 2>&1
  cp $d/resnet50_train.profile.txt $F/r50t-$n-$job.profile.txt 2>/dev/null
  [ $n = 2 ] && cp $c/strata-link/*.cubin $W/link/ 2>/dev/null
  rm -rf $d $c
done
for f in $W/link/*.cubin; do echo "FILE $(basename $f)"; timeout 5 $CO -res-usage $f; done > $F/link-res.txt 2>&1
for f in $W/cap/*/out.cubin; do echo "FILE ${f#$W/cap/}"; timeout 5 $CO -res-usage $f; done > $F/ptxas-res.txt 2>&1
ls $W/cap/*/*.ptx | timeout 60 xargs -P 16 -I{} sh -c 'a=$(grep -o "^\.target sm_[0-9a-z]*" {} | cut -d" " -f2); '"$P"' -arch=$a -c -o {}.c.cubin {}'
for f in $W/cap/*/*.c.cubin; do echo "FILE ${f#$W/cap/}"; timeout 5 $CO -res-usage $f; done > $F/ptxas-c-res.txt 2>&1
tar -C $W -czf $F/cubins.tgz cap link
tar -C $OUT -czf $OUT/first.tgz first && rm -rf $OUT/first $W
