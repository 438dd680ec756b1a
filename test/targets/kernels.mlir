// RUN: irc --emit=llvm %s | FileCheck %s --check-prefix=LLVM
// RUN: irc --emit=ptx %s | FileCheck %s --check-prefix=PTX
// RUN: irc --emit=ptx --ptx-backend=llc --ptx-target=sm_80 %s | FileCheck %s --check-prefix=LLC
// RUN: irc --emit=ptx %s > %t.ptx && ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: irc --emit=ptx --ptx-backend=llc %s > %t2.ptx && ptxas -arch=sm_90 %t2.ptx -o %t2.cubin
// REQUIRES: ptxas, llc

// A row reduction kernel and an elementwise kernel with every math op the
// translation knows, through LLVM IR to PTX by both backends.

// LLVM: target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
// LLVM: target triple = "nvptx64-nvidia-cuda"
// LLVM: @row_sum_wg0 = addrspace(3) global [32 x float] undef, align 16
// LLVM: define void @row_sum(float addrspace(1)* %arg0, float addrspace(1)* %arg1, i64 %arg2)
// LLVM: call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1,
// LLVM: call void @llvm.nvvm.barrier0()
// LLVM: define void @pointwise(half addrspace(1)* %arg0, i16 addrspace(1)* %arg1, i8 addrspace(1)* %arg2, float addrspace(1)* %arg3, i64 %arg4)
// LLVM: !nvvm.annotations = !{![[A:[0-9]+]], ![[B:[0-9]+]]}
// LLVM-DAG: ![[A]] = !{void (float addrspace(1)*, float addrspace(1)*, i64)* @row_sum, !"kernel", i32 1}

// PTX: .version 7.8
// PTX-NEXT: .target sm_90
// PTX: .shared .align 16 .b8 row_sum_wg0[128];
// PTX: .visible .entry row_sum(
// PTX-NEXT: .param .u64 row_sum_param_0,
// PTX: shfl.sync.bfly.b32
// PTX: bar.sync 0;
// PTX: .visible .entry pointwise(
// PTX: ex2.approx.f32
// PTX-NOT: .extern

// LLC: .version 7.8
// LLC: .target sm_80
// LLC: .visible .entry row_sum(
// LLC-NOT: .extern

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @row_sum(%in: memref<?xf32>, %out: memref<?xf32>, %n: index) workgroup(%part : memref<32xf32, 3>) kernel {
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %z = arith.constant 0.0 : f32
      %base = arith.muli %row, %n : index
      %acc = "loop.for"(%tid, %n, %bdim, %z) ({
      ^bb0(%i: index, %a: f32):
        %j = arith.addi %base, %i : index
        %x = loop.load %in[%j] : memref<?xf32>
        %s = arith.addf %a, %x : f32
        loop.yield %s : f32
      }) : (index, index, index, f32) -> f32
      %w = arith.constant 32 : i32
      %o16 = arith.constant 16 : i32
      %o8 = arith.constant 8 : i32
      %r1, %v1 = gpu.shuffle xor %acc, %o16, %w : f32
      %s1 = arith.addf %acc, %r1 : f32
      %r2, %v2 = gpu.shuffle xor %s1, %o8, %w : f32
      %s2 = arith.addf %s1, %r2 : f32
      %lane = arith.remui %tid, %c32 : index
      %warp = arith.divui %tid, %c32 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      "loop.if"(%first) ({
        loop.store %s2, %part[%warp] : memref<32xf32, 3>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      %t0 = arith.cmpi eq, %tid, %c0 : index
      "loop.if"(%t0) ({
        %p = loop.load %part[%c0] : memref<32xf32, 3>
        loop.store %p, %out[%row] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
    gpu.func @pointwise(%h: memref<?xf16>, %b: memref<?xbf16>, %m: memref<?xi1>, %o: memref<?xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %i0 = arith.muli %bid, %bdim : index
      %i = arith.addi %i0, %tid : index
      %in = arith.cmpi slt, %i, %n : index
      "loop.if"(%in) ({
        %x16 = loop.load %h[%i] : memref<?xf16>
        %xb = loop.load %b[%i] : memref<?xbf16>
        %flag = loop.load %m[%i] : memref<?xi1>
        %x = arith.extf %x16 : f16 to f32
        %y = arith.extf %xb : bf16 to f32
        %e = math.exp %x : f32
        %l = math.log %e : f32
        %t = math.tanh %l : f32
        %er = math.erf %t : f32
        %r = math.rsqrt %e : f32
        %sq = math.sqrt %r : f32
        %ab = math.absf %y : f32
        %fl = math.floor %ab : f32
        %rd = math.round %fl : f32
        %s = arith.addf %er, %sq : f32
        %s2 = arith.mulf %s, %rd : f32
        %mx = arith.maximumf %s2, %y : f32
        %sel = arith.select %flag, %mx, %s : f32
        %hb = arith.truncf %sel : f32 to bf16
        %hh = arith.truncf %sel : f32 to f16
        %hs = arith.addf %hh, %x16 : f16
        loop.store %hs, %h[%i] : memref<?xf16>
        loop.store %hb, %b[%i] : memref<?xbf16>
        %neg = arith.cmpf olt, %sel, %y : f32
        loop.store %neg, %m[%i] : memref<?xi1>
        %k = arith.fptosi %sel : f32 to i32
        %kf = arith.sitofp %k : i32 to f32
        loop.store %kf, %o[%i] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
  }
}
