// c = a + s, with s a rank-0 memref (a buffer, not a scalar parameter):
// a plan is prepared once for every value of s.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @add_scalar(%a: memref<?xf32>, %s: memref<1xf32>, %c: memref<?xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %i0 = arith.muli %bid, %bdim : index
      %i = arith.addi %i0, %tid : index
      %in = arith.cmpi slt, %i, %n : index
      "loop.if"(%in) ({
        %x = loop.load %a[%i] : memref<?xf32>
        %c0 = arith.constant 0 : index
        %y = loop.load %s[%c0] : memref<1xf32>
        %r = arith.addf %x, %y : f32
        loop.store %r, %c[%i] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
  }
  func.func @main(%a: memref<?xf32>, %s: memref<f32>) -> memref<?xf32> {
    %n = loop.dim %a, 0 : memref<?xf32>
    %c = loop.alloc(%n) : memref<?xf32>
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %g = arith.ceildivui %n, %c256 : index
    %s1 = "loop.view"(%s) : (memref<f32>) -> memref<1xf32>
    gpu.launch_func @k::@add_scalar blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1) args(%a : memref<?xf32>, %s1 : memref<1xf32>, %c : memref<?xf32>, %n : index)
    return %c : memref<?xf32>
  }
}
