// RUN: irc %s --split-input-file --verify-diagnostics

func.func @int_exp(%a: i32) -> i32 {
  // expected-error@+1 {{'math.exp' op operand #0 must be floating-point-like, but got 'i32'}}
  %0 = "math.exp"(%a) : (i32) -> i32
  return %0 : i32
}

// -----

func.func @mismatch(%a: f32) -> f64 {
  // expected-error@+1 {{'math.sqrt' op requires the same type for all operands and results}}
  %0 = "math.sqrt"(%a) : (f32) -> f64
  return %0 : f64
}
