// s2 = s + s and y = x + x over two sizes: a plan whose fed-back result
// (s2, fed back as s) may be a small or a large part of its pool.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @vadd(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %i0 = arith.muli %bid, %bdim : index
      %i = arith.addi %i0, %tid : index
      %in = arith.cmpi slt, %i, %n : index
      "loop.if"(%in) ({
        %x = loop.load %a[%i] : memref<?xf32>
        %y = loop.load %b[%i] : memref<?xf32>
        %s = arith.addf %x, %y : f32
        loop.store %s, %c[%i] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
  }
  func.func @main(%s: memref<?xf32>, %x: memref<?xf32>) -> (memref<?xf32>, memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %ns = loop.dim %s, 0 : memref<?xf32>
    %s2 = loop.alloc(%ns) : memref<?xf32>
    %gs = arith.ceildivui %ns, %c256 : index
    gpu.launch_func @k::@vadd blocks in (%gs, %c1, %c1) threads in (%c256, %c1, %c1) args(%s : memref<?xf32>, %s : memref<?xf32>, %s2 : memref<?xf32>, %ns : index)
    %nx = loop.dim %x, 0 : memref<?xf32>
    %y = loop.alloc(%nx) : memref<?xf32>
    %gx = arith.ceildivui %nx, %c256 : index
    gpu.launch_func @k::@vadd blocks in (%gx, %c1, %c1) threads in (%c256, %c1, %c1) args(%x : memref<?xf32>, %x : memref<?xf32>, %y : memref<?xf32>, %nx : index)
    return %s2, %y : memref<?xf32>, memref<?xf32>
  }
}
