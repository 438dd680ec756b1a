// irc run --backend nvptx compiles the launch plan and its kernel before
// it looks for a GPU: without one it says so and exits with status 1; with
// one it prints the same summary as the interpreter.
// RUN: irc run %s --random-inputs 1 --backend=nvptx --cache=off > %t 2>&1; echo "exit $?" >> %t
// RUN: FileCheck %s < %t
// CHECK: {{irc: run: --backend nvptx needs an NVIDIA GPU: .+|result 0: shape \(32,\) dtype float32 sum 7 hash [0-9a-f]+}}
// CHECK-NEXT: exit {{1|0}}

// A kernel the executor cannot plan is reported with its location first.
// RUN: sed 's|// BAD ||' %s | not irc run - --random-inputs 1 --backend=nvptx --cache=off 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: <stdin>:32:5: error: 'loop.for' cannot run on the host of a launch plan

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @fill(%o: memref<?xf32>, %n: index) kernel {
      %tid = gpu.thread_id x
      %in = arith.cmpi slt, %tid, %n : index
      "loop.if"(%in) ({
        %one = arith.constant 1.0 : f32
        loop.store %one, %o[%tid] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
  }
  func.func @main() -> memref<?xf32> {
    %c7 = arith.constant 7 : index
    %c32 = arith.constant 32 : index
    %o = loop.alloc(%c32) : memref<?xf32>
    %c1 = arith.constant 1 : index
    // BAD "loop.for"(%c1, %c7, %c1) ({^bb0(%i: index): loop.yield}) : (index, index, index) -> ()
    gpu.launch_func @k::@fill blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%o : memref<?xf32>, %c7 : index)
    return %o : memref<?xf32>
  }
}
