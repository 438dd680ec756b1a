mkdir -p $OUT/check
# (1) default policy (cuDNN, cuBLASLt): ResNets w8/16/32 eval/train fwd + 2 SGD steps (each step checked from the
#     model's own state: loss, raw gradients, running stats, SGD update), small CNN 3 SGD steps; f32 and bf16
(cd nn && timeout 42 ../.device/nn.test -test.run 'TestGPUModels(ResNet|CNN)' -test.v -margins -test.timeout 40s > $OUT/check/default.log 2>&1; echo rc=$? >> $OUT/check/default.log)
# (2) on the GPU only: the ONNX tables — 11 exported-style CNNs (new: grouped+dilated+strided conv + eval BN, BN after
#     a conv the residual also reads, AvgPool ceil+count_include_pad, Gelu tanh/erf + LayerNorm without bias) in f32
#     and as f16 exports, the ResNet block, the transformer block (3 heads of 24, 5 heads of 8, f16 export) — and the
#     PyTorch 1.13/2.11 ONNX exports against PyTorch's own outputs (TestShapesTorchExports)
(cd nn && timeout 18 ../.device/nn.test -test.run 'TestShapes(ONNX(CNNs|ResNetBlock|Transformer)|TorchExports)' -paths=device -test.v -margins > $OUT/check/onnx.log 2>&1; echo rc=$? >> $OUT/check/onnx.log)
