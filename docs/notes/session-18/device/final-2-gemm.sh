G=$OUT/gemm; mkdir -p $G
STRATA_LOGS=autotune OUT=$G/r timeout 220 bash .device/run-device.sh --only gemm_own_bf16,mm_bias_gelu --rep-ms 100 > $G/gemm.txt 2>&1; echo "gemm rc $?" >> $G/gemm.txt
rm -f $G/r/programs.tar
