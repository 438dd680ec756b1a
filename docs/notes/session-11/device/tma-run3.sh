#!/bin/bash
# tma's device call 3: the TMA kernel under CUDA graph capture; gemm_own_bf16 and mm_bias_gelu through the
# benchmark harness (HopperTile = 128x256x64s4wst, strata-bench from main 5a69e71 + TestGPUTMAGraph).
cd "$(dirname "$0")"
echo "== graph capture"
timeout 40 ./togpu.test -test.run 'TestGPUTMAGraph' -test.v 2>&1 | grep -v "^=== RUN"
echo "== bench"
OUT=$OUT timeout 150 bash ./run-device.sh --only gemm_own_bf16,mm_bias_gelu 2>&1 | tail -25
