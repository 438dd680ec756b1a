// Softmax of each row of a rows x cols matrix (row-major, flattened): one
// block of 128 threads per row; the row maximum and the sum of exponentials
// are reduced with warp shuffles and four workgroup slots, then every
// element is written as exp(x - max) / sum.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @softmax(%in: memref<?xf32>, %out: memref<?xf32>, %cols: index) workgroup(%part : memref<4xf32, 3>) kernel {
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %z = arith.constant 0.0 : f32
      %ninf = arith.constant -3.0e38 : f32
      %w = arith.constant 32 : i32
      %o16 = arith.constant 16 : i32
      %o8 = arith.constant 8 : i32
      %o4 = arith.constant 4 : i32
      %o2 = arith.constant 2 : i32
      %o1 = arith.constant 1 : i32
      %base = arith.muli %row, %cols : index
      %lane = arith.remui %tid, %c32 : index
      %warp = arith.divui %tid, %c32 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      %mloc = "loop.for"(%tid, %cols, %bdim, %ninf) ({
      ^bb0(%i: index, %a: f32):
        %j = arith.addi %base, %i : index
        %x = loop.load %in[%j] : memref<?xf32>
        %s = arith.maximumf %a, %x : f32
        loop.yield %s : f32
      }) : (index, index, index, f32) -> f32
      %mr0, %mv0 = gpu.shuffle xor %mloc, %o16, %w : f32
      %ms0 = arith.maximumf %mloc, %mr0 : f32
      %mr1, %mv1 = gpu.shuffle xor %ms0, %o8, %w : f32
      %ms1 = arith.maximumf %ms0, %mr1 : f32
      %mr2, %mv2 = gpu.shuffle xor %ms1, %o4, %w : f32
      %ms2 = arith.maximumf %ms1, %mr2 : f32
      %mr3, %mv3 = gpu.shuffle xor %ms2, %o2, %w : f32
      %ms3 = arith.maximumf %ms2, %mr3 : f32
      %mr4, %mv4 = gpu.shuffle xor %ms3, %o1, %w : f32
      %ms4 = arith.maximumf %ms3, %mr4 : f32
      "loop.if"(%first) ({
        loop.store %ms4, %part[%warp] : memref<4xf32, 3>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      %m = "loop.for"(%c0, %c4, %c1, %ninf) ({
      ^bb0(%k: index, %a: f32):
        %p = loop.load %part[%k] : memref<4xf32, 3>
        %s = arith.maximumf %a, %p : f32
        loop.yield %s : f32
      }) : (index, index, index, f32) -> f32
      gpu.barrier
      %sloc = "loop.for"(%tid, %cols, %bdim, %z) ({
      ^bb0(%i: index, %a: f32):
        %j = arith.addi %base, %i : index
        %x = loop.load %in[%j] : memref<?xf32>
        %d = arith.subf %x, %m : f32
        %e = math.exp %d : f32
        %s = arith.addf %a, %e : f32
        loop.yield %s : f32
      }) : (index, index, index, f32) -> f32
      %ar0, %av0 = gpu.shuffle xor %sloc, %o16, %w : f32
      %as0 = arith.addf %sloc, %ar0 : f32
      %ar1, %av1 = gpu.shuffle xor %as0, %o8, %w : f32
      %as1 = arith.addf %as0, %ar1 : f32
      %ar2, %av2 = gpu.shuffle xor %as1, %o4, %w : f32
      %as2 = arith.addf %as1, %ar2 : f32
      %ar3, %av3 = gpu.shuffle xor %as2, %o2, %w : f32
      %as3 = arith.addf %as2, %ar3 : f32
      %ar4, %av4 = gpu.shuffle xor %as3, %o1, %w : f32
      %as4 = arith.addf %as3, %ar4 : f32
      "loop.if"(%first) ({
        loop.store %as4, %part[%warp] : memref<4xf32, 3>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      %sum = "loop.for"(%c0, %c4, %c1, %z) ({
      ^bb0(%k: index, %a: f32):
        %p = loop.load %part[%k] : memref<4xf32, 3>
        %s = arith.addf %a, %p : f32
        loop.yield %s : f32
      }) : (index, index, index, f32) -> f32
      "loop.for"(%tid, %cols, %bdim) ({
      ^bb0(%i: index):
        %j = arith.addi %base, %i : index
        %x = loop.load %in[%j] : memref<?xf32>
        %d = arith.subf %x, %m : f32
        %e = math.exp %d : f32
        %y = arith.divf %e, %sum : f32
        loop.store %y, %out[%j] : memref<?xf32>
        loop.yield
      }) : (index, index, index) -> ()
      gpu.return
    }
  }
  func.func @main(%x: memref<?xf32>, %rows: index, %cols: index) -> memref<?xf32> {
    %n = loop.dim %x, 0 : memref<?xf32>
    %out = loop.alloc(%n) : memref<?xf32>
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @k::@softmax blocks in (%rows, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<?xf32>, %out : memref<?xf32>, %cols : index)
    return %out : memref<?xf32>
  }
}
