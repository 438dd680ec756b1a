mkdir -p $OUT/first; F=$OUT/first; n=0
for job in resnet50_train:default resnet50_train:link gpt2_train:default resnet50_train:default gpt2_train:link \
           gpt2_train:default cnn_small_train:default resnet50_infer:default; do
  n=$((n+1)); r=${job%%:*}; tag=${job#*:}; pol=$tag; [ $pol = default ] && pol=
  lg=compile,perf_hints,time; [ $n = 1 ] && lg=$lg,pass_timing
  d=$(mktemp -d); c=$(mktemp -d)
  env CUDA_CACHE_PATH=$c STRATA_PTX_LOAD=$pol STRATA_LOGS=$lg timeout 60 .device/strata-models run \
    --out $d --only $r --iters 20 > $F/$n-$r-$tag.log 2>&1
  rm -rf $d $c
done
tar -C $OUT -czf $OUT/first.tgz first && rm -rf $OUT/first
