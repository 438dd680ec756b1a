// Malformed input gets located diagnostics.
// RUN: irc %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

// expected-error@+1 {{expected}}
func.func @unterminated( {

// -----

func.func @f() {
  // expected-error@+1 {{integer constant out of range for attribute}}
  %0 = arith.constant 300 : i8
  return
}

// -----

func.func @f() {
  // expected-error-re@+1 {{expected {{.*}}']'}}
  "x.y"() {a = [1, 2} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{array attribute element type 'i128' is wider than 64 bits}}
  "x.y"() {a = array<i128: 1>} : () -> ()
  return
}

// -----

// expected-error@+1 {{tensor type has more than 2^63-1 elements}}
func.func @f(%x: tensor<4294967296x4294967296xf32>) {
  return
}
