#!/usr/bin/env bash
# wgmma-part.sh — session 20: is the einsum failure under racecheck a race
# inside the wgmma kernel (main_kernel_3, y = [90,1,3]x[90,3,1]) or a
# whole-output loss elsewhere? Runs from the repository root on the GPU
# machine; logs under $OUT/wgmma/. Device time ≈ OUTER seconds (default 88).
#
# Binaries (under .device/):
#   nn.test       main as is (required).
#   nn_diag.test  main + docs/notes/session-20/device/wgmma-diag.patch (optional; a copy is
#                 prebuilt at (rebuild it), from 7a8f347):
#                 closeTo's failure also says how many elements are wrong,
#                 the first 16 of them, how many are 0, and got[:8]; and
#                 TestShapesONNXCNNs checks its outputs last first, so einsum's
#                 p (output 1, the input of y's product) is checked before y.
#                 Build: cd <main checkout> && git apply docs/notes/session-20/device/wgmma-diag.patch &&
#                 go test -c -ldflags "-s -w" -o .device/nn_diag.test ./nn && git checkout nn/
#   nn_fix.test   a fix, if any (optional; none from this helper).
# Every process runs racecheck over the family selection, -test.count=$COUNT
# times in-process, with Go's own -test.timeout ($GOT s) inside the outer
# timeout: a hang then ends in Go's panic, which prints every goroutine's
# stack (the host side: waiting in the driver for the device, or on a Go lock).
set -u
W=$OUT/wgmma; mkdir -p $W
SAN=${SAN:-/usr/local/cuda/bin/compute-sanitizer}
SEL='TestShapesTorchExports$/^torch211(cnn|ts)?$|TestShapesONNXCNNs$'
OUTER=${OUTER:-88}; GOT=${GOT:-78}; COUNT=${COUNT:-2}
export STRATA_CUDNN=off STRATA_CUBLASLT=off
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv
  echo "ptxas on PATH: $(command -v ptxas || echo none)"; ls -la /usr/local/cuda/bin/ptxas 2>&1
  echo "(a ptxas found means exec.DefaultLoadPolicy compiles every text with it: no driver-JIT tiers)"
  env | grep '^STRATA' ; ls -la .device/
} > $W/env.txt 2>&1
# Processes per binary: the diagnostic build gets most, as its failures say more.
declare -A N
N[nn]=12
if [ -x .device/nn_diag.test ]; then N[nn]=4; N[nn_diag]=8; fi
if [ -x .device/nn_fix.test ]; then N[nn]=4; N[nn_fix]=6; [ -n "${N[nn_diag]:-}" ] && N[nn_diag]=4; fi
cd nn
for b in "${!N[@]}"; do
  for i in $(seq 1 ${N[$b]}); do
    (
      s=$(date +%s)
      timeout -k 2 $OUTER $SAN --tool racecheck --print-limit 5 ../.device/$b.test -test.v -paths=device \
        -test.run "$SEL" -test.count=$COUNT -test.timeout=${GOT}s > $W/$b-$i.log 2>&1
      echo "rc=$? secs=$(( $(date +%s)-s ))" >> $W/$b-$i.log
    ) &
  done
done
wait
cd ..
{
  echo "per process: rc (124 = killed by the outer timeout), fails, passes, Go timeout panic, hazards"
  for f in $W/nn*.log; do
    printf '%-22s %-18s fails=%-3s passes=%-4s gotimeout=%s  %s\n' "$(basename $f)" "$(tail -1 $f)" \
      "$(grep -c -- '--- FAIL' $f)" "$(grep -c -- '--- PASS' $f)" "$(grep -c 'panic: test timed out' $f)" \
      "$(grep -h 'RACECHECK SUMMARY' $f | head -1)"
  done
  echo; echo "per binary: processes, processes with a wrong result, with a Go timeout (hang), killed (124), complete selections passed"
  for b in "${!N[@]}"; do
    ls $W/$b-*.log >/dev/null 2>&1 || continue
    np=$(ls $W/$b-*.log | wc -l)
    nf=$(grep -l 'element .* of .* is' $W/$b-*.log 2>/dev/null | wc -l)
    nh=$(grep -l 'panic: test timed out' $W/$b-*.log 2>/dev/null | wc -l)
    nk=$(grep -l '^rc=124' $W/$b-*.log 2>/dev/null | wc -l)
    ok=$(grep -h -- '^--- PASS: TestShapesONNXCNNs ' $W/$b-*.log | wc -l)
    echo "$b: procs=$np wrong=$nf hang=$nh killed=$nk onnx-passes=$ok (each process runs the selection $COUNT times)"
  done
  echo; echo "wrong results (the test's line: DIAG says how many elements, which, how many zero):"
  grep -H 'element .* of .* is' $W/nn*.log | sed "s#$W/##"
  echo; echo "hangs: the test running at Go's timeout, and the goroutines in the driver or on a lock:"
  for f in $(grep -l 'panic: test timed out' $W/nn*.log 2>/dev/null); do
    echo "== $(basename $f)"; grep -A3 'panic: test timed out' $f | head -4
    grep -A6 'running tests' $f | grep -v '^panic\|running tests' | head -5
    # goroutine states, then the Strata and sync frames they sit in
    grep -oE '^goroutine [0-9]+ \[[^]]*\]' $f | sed 's/goroutine [0-9]* //' | sort | uniq -c | sort -rn | head -6
    grep -oE '(strata-ir/strata/runtime/[a-z]+\.[^(]+|sync\.\(\*[A-Za-z]+\)\.[A-Za-z]+|internal/sync\.[^(]+)' $f | sort | uniq -c | sort -rn | head -15
  done
  echo; echo "processes killed by the outer timeout (no Go dump: the process did not return from a driver call, or the sanitizer hung): last RUN lines"
  for f in $(grep -l '^rc=124' $W/nn*.log 2>/dev/null); do echo "== $(basename $f)"; grep '^=== RUN' $f | tail -2; done
} > $W/summary.txt 2>&1
cat $W/summary.txt
