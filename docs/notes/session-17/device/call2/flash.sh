F=$OUT/flash; mkdir -p $F; T=$PWD/.device/passes_togpu.test
## 1. checks: small (tails, d64/d128) and large (vs the mma.sync kernel) (≈ 25 s)
(cd passes/togpu && timeout 45 $T -test.run 'TestGPUFlash$/^(2x1x200x130-d64|1x1x130x200-d128|1x2x150x140-d128|1x1x64x128-d64|1x1x40x200-d64)/.*(128x128gplqda.*r132|gplqko)$' -test.v) > $F/check.txt 2>&1; echo "check rc $? pass $(grep -cE '^\s*--- PASS' $F/check.txt) fail $(grep -cE '^\s*--- FAIL' $F/check.txt)" | tee -a $F/summary.txt
(cd passes/togpu && timeout 60 $T -test.run 'TestGPUFlashLarge/^(16x16x1024x1024-d128|16x16x1000x1000-d128|16x16x1024x1024-d64-causal=false)/.*(128x128gplqda.*r132|64x64gplqko)$' -test.v) > $F/large.txt 2>&1; echo "large rc $? pass $(grep -cE '^\s*--- PASS' $F/large.txt) fail $(grep -cE '^\s*--- FAIL' $F/large.txt)" | tee -a $F/summary.txt; grep -E "^\s*--- FAIL|differ" $F/large.txt | head -5 | tee -a $F/summary.txt
## 2. kernel times, two rounds (≈ 35 s)
(cd passes/togpu && timeout 70 $T -test.count 2 -test.run 'TestGPUFlash$/^time-.*-d128-.*-(64x64gplqko|128x128gplqdator132|128x128gplqdatonr132|128x128gplqdaonr132)$' -test.v) > $F/times.txt 2>&1; echo "times rc $?" | tee -a $F/summary.txt
grep -E "^=== RUN.*time-|ms, " $F/times.txt | sed -E 's/.*(time-[^ ]*)$/\1/; s/.*flash_test.go:[0-9]+: //' | paste - - | sed 's/-scale=0-bf16//' | tee -a $F/summary.txt
## 3. the d128 rows vs torch.compile, default mode (≈ 30 s)
OUT=$F/rows timeout 75 bash .device/run-device.sh --only attention_d128,attention_causal_d128 --default-only attention_d128,attention_causal_d128 --rep-ms 100 > $F/rows.log 2>&1; echo "rows rc $?" | tee -a $F/summary.txt
grep -E "^attention|\"default\"" $F/rows.log | grep -v "n/a" | cut -c1-200 | tee -a $F/summary.txt
rm -f $F/rows/programs.tar
## 4. the d128 row, Strata only, timing loops of 10, 100 and 300 ms (≈ 15 s)
for r in 10 100 300; do D=$(mktemp -d); timeout 25 .device/strata-bench prepare --out $D --only attention_d128 --default-only attention_d128 --rep-ms $r 2>&1 | grep -E "^attention_d128 +default" | sed "s/^/rep $r: /" | tee -a $F/summary.txt; rm -rf $D; done
