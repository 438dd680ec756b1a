// func.func's and func.constant's syntax errors get mlir-opt's
// diagnostics; both tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics

// expected-error@+1 {{expected valid '@'-identifier for symbol name}}
func.func nameless(i32)

// -----

// expected-error@+1 {{'sym_name' is an inferred attribute and should not be specified in the explicit attribute dictionary}}
func.func private @f() attributes {sym_name = "g"}

// -----

// expected-error@+1 {{'sym_visibility' is an inferred attribute and should not be specified in the explicit attribute dictionary}}
func.func @f() attributes {sym_visibility = "private"}

// -----

// expected-error@+1 {{expected non-function type}}
func.func private @f(i32, ...)

// -----

// expected-error@+1 {{expected three consecutive dots for an ellipsis}}
func.func private @f(i32, ..)

// -----

func.func @f() {
  // expected-error@+1 {{invalid kind of attribute specified}}
  %0 = func.constant "g" : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{reference to undefined function 'g'}}
  %0 = func.constant @g : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{unregistered operation 'func.frobnicate' found in dialect ('func') that does not allow unknown operations}}
  "func.frobnicate"() : () -> ()
  return
}
