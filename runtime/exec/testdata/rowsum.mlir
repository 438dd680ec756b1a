// Row sums of a rows x cols matrix (row-major, flattened): one block of
// 256 threads per row, strided partial sums, a warp shuffle tree, and the
// eight warp sums combined through workgroup memory.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @row_sum(%in: memref<?xf32>, %out: memref<?xf32>, %cols: index) workgroup(%part : memref<8xf32, 3>) kernel {
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %z = arith.constant 0.0 : f32
      %base = arith.muli %row, %cols : index
      %acc = "loop.for"(%tid, %cols, %bdim, %z) ({
      ^bb0(%i: index, %a: f32):
        %j = arith.addi %base, %i : index
        %x = loop.load %in[%j] : memref<?xf32>
        %s = arith.addf %a, %x : f32
        loop.yield %s : f32
      }) : (index, index, index, f32) -> f32
      %w = arith.constant 32 : i32
      %o16 = arith.constant 16 : i32
      %o8 = arith.constant 8 : i32
      %o4 = arith.constant 4 : i32
      %o2 = arith.constant 2 : i32
      %o1 = arith.constant 1 : i32
      %r1, %v1 = gpu.shuffle xor %acc, %o16, %w : f32
      %s1 = arith.addf %acc, %r1 : f32
      %r2, %v2 = gpu.shuffle xor %s1, %o8, %w : f32
      %s2 = arith.addf %s1, %r2 : f32
      %r3, %v3 = gpu.shuffle xor %s2, %o4, %w : f32
      %s3 = arith.addf %s2, %r3 : f32
      %r4, %v4 = gpu.shuffle xor %s3, %o2, %w : f32
      %s4 = arith.addf %s3, %r4 : f32
      %r5, %v5 = gpu.shuffle xor %s4, %o1, %w : f32
      %s5 = arith.addf %s4, %r5 : f32
      %lane = arith.remui %tid, %c32 : index
      %warp = arith.divui %tid, %c32 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      "loop.if"(%first) ({
        loop.store %s5, %part[%warp] : memref<8xf32, 3>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      %t0 = arith.cmpi eq, %tid, %c0 : index
      "loop.if"(%t0) ({
        %total = "loop.for"(%c0, %c8, %c1, %z) ({
        ^bb0(%k: index, %a: f32):
          %p = loop.load %part[%k] : memref<8xf32, 3>
          %s = arith.addf %a, %p : f32
          loop.yield %s : f32
        }) : (index, index, index, f32) -> f32
        loop.store %total, %out[%row] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
  }
  func.func @main(%x: memref<?xf32>, %rows: index, %cols: index) -> memref<?xf32> {
    %out = loop.alloc(%rows) : memref<?xf32>
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @k::@row_sum blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1) args(%x : memref<?xf32>, %out : memref<?xf32>, %cols : index)
    return %out : memref<?xf32>
  }
}
