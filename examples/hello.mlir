// hello.mlir: a small func/arith/math program, run end to end by
//
//   go run ./tools/irc run examples/hello.mlir --random-inputs 1
//
// or, with inputs of your own (0-d .npy files, one per argument):
//
//   go run ./tools/irc npy make x.npy 0.5      # also zeros, ones, rand, arange
//   go run ./tools/irc npy make w.npy 2
//   go run ./tools/irc npy make b.npy -1
//   go run ./tools/irc run examples/hello.mlir --input x.npy --input w.npy --input b.npy
//
// @main computes a neuron: y = sigmoid(w*x + b), and its "confidence"
// sqrt(y*(1-y)) scaled by log2(1 + |x|).
func.func @main(%x: f32, %w: f32, %b: f32) -> (f32, f32) {
  %wx = arith.mulf %w, %x : f32
  %z = arith.addf %wx, %b : f32
  %y = call @sigmoid(%z) : (f32) -> f32
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

// sigmoid(z) = 1 / (1 + exp(-z))
func.func private @sigmoid(%z: f32) -> f32 {
  %one = arith.constant 1.0 : f32
  %0 = arith.negf %z : f32
  %1 = math.exp %0 : f32
  %2 = arith.addf %one, %1 : f32
  %3 = arith.divf %one, %2 : f32
  return %3 : f32
}
