#!/usr/bin/env bash
# End-to-end check on the GPU machine: each program here runs in the reference
# interpreter and on the GPU (lower-to-gpu, native PTX backend), and the
# results are compared. Needs irc (built here, carried in .device) and numpy.
#   bash bench/e2e/run.sh [path/to/irc]
cd "$(dirname "$0")"; irc=${1:-../../.device/irc}; d=$(mktemp -d); status=0
for f in *.mlir; do
  n=${f%.mlir}; extra=""; [ $n = dynamic ] && extra="--shape arg0=300x128"
  nres=1; grep -q -- '-> (' $f && nres=$(( $(grep -o -- '-> (.*) {' $f | head -1 | tr -cd ',' | wc -c) + 1 ))
  outs() { for i in $(seq 0 $((nres-1))); do echo -n " --output $d/$n.$1.$i.npy"; done; }
  $irc run $f --random-inputs 5 $extra $(outs interp) > /dev/null 2>$d/err || { echo "$n interp ERROR: $(head -3 $d/err)"; status=1; continue; }
  $irc run --backend nvptx --cache=off $f --random-inputs 5 $extra $(outs gpu) > /dev/null 2>$d/err || { echo "$n gpu ERROR: $(head -5 $d/err)"; status=1; continue; }
  for i in $(seq 0 $((nres-1))); do echo "$n[$i]: $(python3 compare.py $d/$n.interp.$i.npy $d/$n.gpu.$i.npy)" || status=1; done
done
rm -rf "$d"; exit $status
