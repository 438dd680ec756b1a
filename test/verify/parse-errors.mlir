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
