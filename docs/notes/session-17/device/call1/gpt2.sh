mkdir -p $OUT/gpt2
# 1. gpt2_train and gpt2_prefill, Strata + torch eager (no torch.compile), per-kernel profiles, ≈ 55 s
STRATA_TORCH_COMPILE=none OUT=$OUT/gpt2/m timeout 180 bash .device/run-models-device.sh --only gpt2_train,gpt2_prefill --profile 1 > $OUT/gpt2/models.txt 2>&1
# 2. column sums [8192, 768] (bias / LN-parameter gradients): the split pass's form vs hand splits, timed, ≈ 15 s
(cd passes/togpu && STRATA_ROW_SWEEP=colsum timeout 90 ../../.device/passes_togpu.test -test.run 'TestGPUColumnSumSplits' -test.v > $OUT/gpt2/colsum.txt 2>&1)
