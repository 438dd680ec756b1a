// c = a + b, returned with a itself: a plan whose result is an argument
// (as a forward pass returns a weight it saves for the backward pass).
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
  func.func @main(%a: memref<?xf32>, %b: memref<?xf32>) -> (memref<?xf32>, memref<?xf32>) {
    %n = loop.dim %a, 0 : memref<?xf32>
    %c = loop.alloc(%n) : memref<?xf32>
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %g = arith.ceildivui %n, %c256 : index
    gpu.launch_func @k::@vadd blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1) args(%a : memref<?xf32>, %b : memref<?xf32>, %c : memref<?xf32>, %n : index)
    return %c, %a : memref<?xf32>, memref<?xf32>
  }
}
