mkdir -p $OUT/gpt2; d=$(mktemp -d)
# 1. Strata only, per-kernel profiles of gpt2_train and resnet50_train (resnet's BN-statistics kernels changed too), ≈ 40 s
STRATA_LOGS=compile timeout 150 .device/strata-models run --out $d --only gpt2_train,resnet50_train --profile 1 > $OUT/gpt2/strata.log 2>&1; cp $d/*profile.txt $OUT/gpt2/; rm -rf $d
# 2. column sums [8192, 768]: the column mapping (default) vs a warp a column (rows-per-block=8), P = 256/512/1024, ≈ 15 s
(cd passes/togpu && STRATA_ROW_SWEEP=colsum timeout 90 ../../.device/passes_togpu.test -test.run 'TestGPUColumnSumSplits' -test.v > $OUT/gpt2/colsum.txt 2>&1)
