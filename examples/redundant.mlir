// redundant.mlir: a program full of work the generic cleanups remove.
//
//   go run ./tools/irc examples/redundant.mlir \
//     --pass-pipeline='builtin.module(func.func(canonicalize{max-iterations=10},cse),symbol-dce)'
//
// canonicalize folds the constants and the identities (x+0, x*1, x-x on
// integers), cse merges the repeated subexpressions, symbol-dce drops the
// private function nobody calls. Run it with --print-ir-after-all to watch
// each pass, or with --timing. The results do not change:
//
//   go run ./tools/irc run examples/redundant.mlir --random-inputs 7
func.func @main(%x: i32, %y: i32, %f: f32) -> (i32, i32, f32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  // 2 + 3 folds to 5.
  %c5 = arith.addi %c2, %c3 : i32
  // x + 0 and x * 1 are x.
  %a = arith.addi %x, %c0 : i32
  %b = arith.muli %a, %c1 : i32
  // The same product twice: cse keeps one.
  %p = arith.muli %b, %y : i32
  %q = arith.muli %b, %y : i32
  %s = arith.addi %p, %q : i32
  // y - y is 0 for integers.
  %z = arith.subi %y, %y : i32
  %t = arith.addi %s, %z : i32
  %r = arith.addi %t, %c5 : i32
  // Dead: nothing uses it.
  %dead = arith.muli %x, %x : i32
  // A call to an identity-like helper, and a pure float chain computed twice.
  %h = call @helper(%x) : (i32) -> i32
  %g1 = arith.mulf %f, %f : f32
  %g2 = arith.mulf %f, %f : f32
  %g = arith.addf %g1, %g2 : f32
  return %r, %h, %g : i32, i32, f32
}

func.func private @helper(%v: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %v, %c0 : i32
  return %0 : i32
}

// Nobody calls it: symbol-dce removes it.
func.func private @unused(%v: i32) -> i32 {
  %0 = arith.addi %v, %v : i32
  return %0 : i32
}
