// The tensor-core ops (gpu.cp_async, gpu.ldmatrix, gpu.mma_sync) through
// LLVM IR to PTX by both backends, assembled by ptxas.
// REQUIRES: ptxas, llc
// RUN: irc --emit=llvm %s | FileCheck %s --check-prefix=LLVM
// RUN: irc --emit=ptx %s > %t.ptx && FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: irc --emit=ptx --ptx-backend=llc %s > %t2.ptx && FileCheck %s --check-prefix=PTX < %t2.ptx
// RUN: ptxas -arch=sm_90 %t2.ptx -o %t2.cubin

// LLVM: call void @llvm.nvvm.cp.async.cg.shared.global.16.s(
// LLVM: call void @llvm.nvvm.cp.async.commit.group()
// LLVM: call void @llvm.nvvm.cp.async.wait.group(i32 0)
// LLVM: call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(
// LLVM: call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16(
// LLVM: call { float, float, float, float } @llvm.nvvm.mma.m16n8k16.row.col.bf16(

// PTX: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX: cp.async.commit_group;
// PTX: cp.async.wait_group 0;
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NOT: .extern

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @mma(%a: memref<256xbf16>, %b: memref<128xbf16>, %d: memref<128xf32>) workgroup(%sa: memref<256xbf16, 3>, %sb: memref<128xbf16, 3>) kernel {
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c4 = arith.constant 4 : index
      %c2 = arith.constant 2 : index
      %full = arith.constant 16 : i32
      %zero = arith.constant 0.0 : f32
      %t = gpu.thread_id x
      %off = arith.muli %t, %c8 : index
      %inA = arith.cmpi ult, %t, %c16 : index
      %inB = arith.cmpi ult, %t, %c8 : index
      "loop.if"(%inA) ({
        "gpu.cp_async"(%sa, %off, %a, %off, %full) <{bytes = 16 : i64}> : (memref<256xbf16, 3>, index, memref<256xbf16>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "loop.if"(%inB) ({
        "gpu.cp_async"(%sb, %off, %b, %off, %full) <{bytes = 16 : i64}> : (memref<128xbf16, 3>, index, memref<128xbf16>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "gpu.cp_async_commit"() : () -> ()
      "gpu.cp_async_wait"() <{pending = 0 : i64}> : () -> ()
      gpu.barrier
      %r16 = arith.remui %t, %c16 : index
      %h = arith.divui %t, %c16 : index
      %ra = arith.muli %r16, %c16 : index
      %ca = arith.muli %h, %c8 : index
      %ia = arith.addi %ra, %ca : index
      %a4:4 = "gpu.ldmatrix"(%sa, %ia) <{num = 4 : i64}> : (memref<256xbf16, 3>, index) -> (i32, i32, i32, i32)
      %kb = arith.remui %t, %c16 : index
      %ib = arith.muli %kb, %c8 : index
      %b2:2 = "gpu.ldmatrix"(%sb, %ib) <{num = 2 : i64, trans}> : (memref<128xbf16, 3>, index) -> (i32, i32)
      %d4:4 = "gpu.mma_sync"(%a4#0, %a4#1, %a4#2, %a4#3, %b2#0, %b2#1, %zero, %zero, %zero, %zero) <{ab_type = bf16}> : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> (f32, f32, f32, f32)
      %g = arith.divui %t, %c4 : index
      %tq = arith.remui %t, %c4 : index
      %col = arith.muli %tq, %c2 : index
      %row0 = arith.muli %g, %c8 : index
      %o0 = arith.addi %row0, %col : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %o1 = arith.addi %o0, %c1 : index
      %o2 = arith.addi %o0, %c64 : index
      %o3 = arith.addi %o2, %c1 : index
      loop.store %d4#0, %d[%o0] : memref<128xf32>
      loop.store %d4#1, %d[%o1] : memref<128xf32>
      loop.store %d4#2, %d[%o2] : memref<128xf32>
      loop.store %d4#3, %d[%o3] : memref<128xf32>
      gpu.return
    }
  }
}
