// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: irc %s --split-input-file --verify-diagnostics | FileCheck %s

// Every expected diagnostic is produced where the comments say, and no
// other one: irc succeeds, and prints the chunks that had no error.

// CHECK-LABEL: func.func @fine
// CHECK:       // -----
// CHECK-NOT:   func.func
func.func @fine(%a: i32) -> i32 {
  return %a : i32
}

// -----

func.func @wrong_result(%a: i32) -> i64 {
  // expected-error@+1 {{type of return operand 0 ('i32') doesn't match function result type ('i64')}}
  return %a : i32
}

// -----

// expected-note@+1 {{see existing symbol definition here}}
func.func @twice() {
  return
}
// expected-error@below {{redefinition of symbol named 'twice'}}
func.func @twice() {
  return
}

// -----

func.func @undeclared() -> i32 {
  // expected-error@+1 {{use of undeclared SSA value name}}
  return %nope : i32
}
