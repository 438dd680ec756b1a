// acc += x written into acc in place (loop.updates_args): the executor
// gives the plan a copy of acc unless the caller donated it.
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
  func.func @main(%acc: memref<?xf32>, %x: memref<?xf32>) -> memref<?xf32> attributes {loop.updates_args = array<i64: 0>} {
    %n = loop.dim %acc, 0 : memref<?xf32>
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1) args(%acc : memref<?xf32>, %x : memref<?xf32>, %acc : memref<?xf32>, %n : index)
    return %acc : memref<?xf32>
  }
}
