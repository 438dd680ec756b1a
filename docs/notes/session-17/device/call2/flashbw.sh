W=$OUT/flashbw; mkdir -p $W; T=$PWD/.device/passes_togpu.test
(cd passes/togpu && timeout 55 $T -test.run 'TestGPUFlashGrad$/^check-.*-(qt(32|64)-wgmma(-heavy|-overlap|-staged|-stats|-overlap-staged|-staged-stats|-atomic-bulk-r128-staged)?|qt(0|16|32)-reload=(true|false))$' -test.v) > $W/checks.txt 2>&1; echo "checks rc $?"
grep -cE "^\s*--- PASS: .*check-" $W/checks.txt; grep -E "^\s*--- FAIL|rror|panic" $W/checks.txt | head -8
(cd passes/togpu && timeout 80 $T -test.run 'TestGPUFlashGrad$/^time-train-16x16x1024x1024-(d128-.*-(qt64-wgmma(-overlap|-staged|-stats|-staged-stats|-heavy|-atomic-bulk-r128|-atomic-bulk-r128-staged)?|qt32-wgmma(-staged-stats|-overlap-staged-stats)?)|d64-.*-(qt32-wgmma(-overlap|-staged|-stats|-staged-stats|-overlap-staged-stats|-heavy)?|qt64-wgmma-overlap-staged-stats))$' -test.v) > $W/times.txt 2>&1; echo "times rc $?"
grep -E "=== RUN|forward\+backward|@flash" $W/times.txt | sed 's/=== RUN   TestGPUFlashGrad.time-train-16x16x1024x1024-//' | cut -c1-150
