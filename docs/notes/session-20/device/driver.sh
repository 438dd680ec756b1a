#!/usr/bin/env bash
# Device call driver: unpack binaries, run each part .dc/parts/NN-NAME.sh (budget in .dc/parts/NN-NAME.budget),
# tar each part's $OUT/NAME into $OUT/NAME.tgz. Writes $OUT/call.log.
set -uo pipefail
mkdir -p .device && tar -xzf .dc/bins.tgz -C .device
OUT=${OUT:-/tmp/out}; export OUT; mkdir -p "$OUT"
t0=$(date +%s); L=$OUT/call.log
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; git log --oneline -1 2>/dev/null; cat .dc/commit 2>/dev/null; } >> $L 2>&1
for p in .dc/parts/*.sh; do
  b=$(basename $p .sh); n=${b#*-}; bud=$(cat .dc/parts/$b.budget 2>/dev/null || echo 60)
  mkdir -p $OUT/$n; s=$(date +%s)
  echo "[$(( s-t0 )) s] start $n (budget $bud s)" >> $L
  ( cd "$(pwd)" && timeout $bud bash $p ) > $OUT/$n/part.log 2>&1; rc=$?
  echo "[$(( $(date +%s)-t0 )) s] end $n rc $rc ($(( $(date +%s)-s )) s)" >> $L
  if [ -d $OUT/$n ]; then
    if [ -f $OUT/$n.tgz ]; then mv $OUT/$n/part.log $OUT/$n.part.log 2>/dev/null; rm -rf $OUT/$n; else tar -C $OUT/$n -czf $OUT/$n.tgz . && rm -rf $OUT/$n; fi
  fi
done
echo "[$(( $(date +%s)-t0 )) s] done" >> $L
cat $L
