mkdir -p $OUT/check && cd nn
# (1) default policy (cuDNN, cuBLASLt): ResNets w8/16/32 eval/train fwd + 2 SGD steps, small CNN 3 SGD steps, f32 and bf16
timeout 55 ../.device/nn.test -test.run 'TestGPUModels(ResNet|CNN)' -test.v -margins -test.timeout 50s > $OUT/check/default.log 2>&1; echo rc=$? >> $OUT/check/default.log
# (2) Strata's own kernels: the ResNet SGD subtests only
STRATA_CUDNN=off STRATA_CUBLASLT=off timeout 12 ../.device/nn.test -test.run 'TestGPUModelsResNet/.*/sgd' -test.v -margins > $OUT/check/own.log 2>&1; echo rc=$? >> $OUT/check/own.log
cd $OUT && tar czf check.tgz check && rm -r check
