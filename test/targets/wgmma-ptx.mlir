// A bf16 attention of head dim 64 through graph-attention-to-flash{wgmma=true}
// becomes the Hopper flash kernel: its gpu.module asks for sm_90a, which
// --emit=ptx takes (ISA 8.1, nvptx.WGMMAPTXVersion) unless --ptx-target names a target that cannot
// run it; ptxas assembles it for sm_90a.
// REQUIRES: ptxas
// RUN: irc %s --emit=ptx --pass-pipeline='builtin.module(graph-attention-to-flash{wgmma=true},lower-to-gpu)' > %t.ptx && FileCheck %s < %t.ptx
// RUN: ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: not irc %s --emit=ptx --ptx-target=sm_80 --pass-pipeline='builtin.module(graph-attention-to-flash{wgmma=true},lower-to-gpu)' 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not irc %s --emit=ptx --ptx-target=sm_90a --ptx-version=7.8 2>&1 | FileCheck %s --check-prefix=OLD
// CHECK: .version 8.1
// CHECK: .target sm_90a
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-NOT: .extern
// SM80: error: gpu.module @main_flash_kernels needs the PTX target sm_90a, which target sm_80 cannot run
// OLD: error: native PTX backend: PTX version 7.8 is too old for sm_90a (need 8.0 or later)

func.func @main(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16> {
  %r = "graph.attention"(%q, %k, %v) <{causal = true}> : (tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16>
  return %r : tensor<1x2x128x64xbf16>
}
