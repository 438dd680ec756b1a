M=$OUT/models; mkdir -p $M
CUDA_CACHE_PATH=$(mktemp -d) STRATA_LOGS=compile OUT=$M timeout 320 bash .device/run-models-device.sh --profile 1 > $M/run.log 2>&1; echo "models rc $?" >> $M/run.log
rm -f $M/programs.tar
