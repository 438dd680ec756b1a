// Workgroup buffers over the 48 KiB of static shared memory live in one
// dynamic shared array, carved at 16-byte aligned offsets; smaller ones
// stay static. Through LLVM IR to PTX by both backends, assembled by ptxas;
// the launch passes the bytes, and the interpreter runs the kernel as any.
// REQUIRES: ptxas, llc
// RUN: irc --emit=llvm %s | FileCheck %s --check-prefix=LLVM
// RUN: irc --emit=ptx %s > %t.ptx && FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: irc --emit=ptx --ptx-backend=llc %s > %t2.ptx && FileCheck %s --check-prefix=PTX < %t2.ptx
// RUN: ptxas -arch=sm_90 %t2.ptx -o %t2.cubin
// RUN: irc run %s --random-inputs 1 | FileCheck %s --check-prefix=INTERP

// LLVM-DAG: @small_wg0 = addrspace(3) global [64 x float] undef, align 16
// LLVM-DAG: @strata_dynamic_shared = external addrspace(3) global [0 x i8], align 16
// LLVM: define void @big(
// LLVM: getelementptr ([0 x i8], [0 x i8] addrspace(3)* @strata_dynamic_shared, i64 0, i64 65552)

// PTX-DAG: .shared .align 16 .b8 small_wg0[256];
// PTX-DAG: .extern .shared .align 16 .b8 strata_dynamic_shared[];
// PTX-NOT: big_wg
// PTX: .visible .entry big(
// PTX: .visible .entry small(
// PTX-NOT: .extern

// Thread t of @big writes t + 1 to both buffers at t (the second at byte
// 65552, 16-byte aligned past the first's 16385 floats) and, after a
// barrier, adds its neighbour's two: out[t] = 2·((t + 1) mod 64 + 1),
// 4160 in all; @small doubles it through static shared memory.
// INTERP: result 0: shape (64,) dtype float32 sum 8320

module attributes {gpu.container_module} {
  func.func @main(%out: memref<64xf32>) -> memref<64xf32> {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %bytes = arith.constant 65808 : i32
    gpu.launch_func @k::@big blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) dynamic_shared_memory_size %bytes args(%out : memref<64xf32>)
    gpu.launch_func @k::@small blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%out : memref<64xf32>)
    return %out : memref<64xf32>
  }
  gpu.module @k {
    gpu.func @big(%out: memref<64xf32>) workgroup(%a : memref<16385xf32, 3>, %b : memref<64xf32, 3>) kernel {
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %t = gpu.thread_id x
      %t1 = arith.addi %t, %c1 : index
      %i = arith.index_cast %t1 : index to i32
      %f = arith.sitofp %i : i32 to f32
      loop.store %f, %a[%t] : memref<16385xf32, 3>
      loop.store %f, %b[%t] : memref<64xf32, 3>
      gpu.barrier
      %n = arith.remui %t1, %c64 : index
      %x = loop.load %a[%n] : memref<16385xf32, 3>
      %y = loop.load %b[%n] : memref<64xf32, 3>
      %s = arith.addf %x, %y : f32
      loop.store %s, %out[%t] : memref<64xf32>
      gpu.return
    }
    gpu.func @small(%out: memref<64xf32>) workgroup(%a : memref<64xf32, 3>) kernel {
      %t = gpu.thread_id x
      %x = loop.load %out[%t] : memref<64xf32>
      loop.store %x, %a[%t] : memref<64xf32, 3>
      gpu.barrier
      %y = loop.load %a[%t] : memref<64xf32, 3>
      %z = arith.addf %x, %y : f32
      loop.store %z, %out[%t] : memref<64xf32>
      gpu.return
    }
  }
}
