// irc run executes a function with the reference interpreter.
// RUN: irc run %s --input %S/Inputs/x.npy --input %S/Inputs/w.npy --input %S/Inputs/b.npy | FileCheck %s
// sigmoid(2*0.5 - 1) = 0.5 and sqrt(0.5*0.5) * log2(1 + 0.5) = 0.2925
// CHECK:      result 0: shape () dtype float32 sum 0.5 hash {{[0-9a-f]+}} values [0.5]
// CHECK-NEXT: result 1: shape () dtype float32 sum 0.2924{{[0-9]*}} hash {{[0-9a-f]+}} values [0.2924{{[0-9]*}}]

// Results written to .npy files read back as inputs: swapped, the first
// two arguments give the same product.
// RUN: irc run %s --input %S/Inputs/x.npy --input %S/Inputs/w.npy --input %S/Inputs/b.npy --output %t.y.npy --output %t.c.npy
// RUN: irc run %s --func=neuron --input %S/Inputs/w.npy --input %S/Inputs/x.npy --input %S/Inputs/b.npy | FileCheck %s --check-prefix=SWAP
// SWAP: result 0: shape () dtype float32 sum 0.5 hash {{[0-9a-f]+}} values [0.5]
// RUN: irc run %s --func neuron --input %t.y.npy --input %S/Inputs/w.npy --input %S/Inputs/b.npy | FileCheck %s --check-prefix=CHAIN
// sigmoid(2*0.5 - 1) again, from the .npy irc wrote:
// CHAIN: result 0: shape () dtype float32 sum 0.5 hash

// Random inputs are reproducible, and the pipeline does not change results.
// RUN: irc run %s --random-inputs 42 > %t.r1
// RUN: irc run %s --random-inputs 42 --pass-pipeline='builtin.module(func.func(canonicalize,cse),symbol-dce)' > %t.r2
// RUN: diff %t.r1 %t.r2
// RUN: irc run %s --func=@scale --random-inputs 1 | FileCheck %s --check-prefix=TENSOR
// TENSOR: result 0: shape (4,) dtype float32 sum {{.*}} hash {{[0-9a-f]+}} values [{{.*}} {{.*}} {{.*}} {{.*}}]

func.func @main(%x: f32, %w: f32, %b: f32) -> (f32, f32) {
  %y = call @neuron(%x, %w, %b) : (f32, f32, f32) -> f32
  %one = arith.constant 1.0 : f32
  %1 = arith.subf %one, %y : f32
  %2 = arith.mulf %y, %1 : f32
  %3 = math.sqrt %2 : f32
  %4 = math.absf %x : f32
  %5 = arith.addf %one, %4 : f32
  %6 = math.log2 %5 : f32
  %c = arith.mulf %3, %6 : f32
  return %y, %c : f32, f32
}

func.func @neuron(%x: f32, %w: f32, %b: f32) -> f32 {
  %wx = arith.mulf %w, %x : f32
  %z = arith.addf %wx, %b : f32
  %one = arith.constant 1.0 : f32
  %0 = arith.negf %z : f32
  %1 = math.exp %0 : f32
  %2 = arith.addf %one, %1 : f32
  %3 = arith.divf %one, %2 : f32
  return %3 : f32
}

func.func @scale(%v: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %v, %v : tensor<4xf32>
  return %0 : tensor<4xf32>
}
