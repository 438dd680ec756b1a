// RUN: irc %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

func.func @wrong_count(%a: i32) -> (i32, i32) {
  // expected-error@+1 {{'func.return' op has 1 operands, but enclosing function (@wrong_count) returns 2}}
  return %a : i32
}

// -----

func.func @wrong_type(%a: i32) -> i64 {
  // expected-error@+1 {{type of return operand 0 ('i32') doesn't match function result type ('i64')}}
  return %a : i32
}

// -----

func.func @caller() {
  // expected-error@+1 {{'func.call' op 'missing' does not reference a valid function}}
  call @missing() : () -> ()
  return
}

// -----

func.func private @callee(i32) -> i32

func.func @bad_call(%a: f32) -> i32 {
  // expected-error@+1 {{'func.call' op operand type mismatch: expected operand type 'i32', but provided 'f32' for operand number 0}}
  %0 = call @callee(%a) : (f32) -> i32
  return %0 : i32
}

// -----

func.func private @callee2(i32) -> i32

func.func @bad_call_count(%a: i32) -> i32 {
  // expected-error@+1 {{'func.call' op incorrect number of operands for callee}}
  %0 = "func.call"(%a, %a) <{callee = @callee2}> : (i32, i32) -> i32
  return %0 : i32
}

// -----

func.func @no_terminator() {
  // expected-error@+1 {{block with no terminator}}
  %0 = arith.constant 1 : i32
}

// -----

// expected-note@+1 {{see existing symbol definition here}}
func.func @dup() {
  return
}
// expected-error@+1 {{redefinition of symbol named 'dup'}}
func.func @dup() {
  return
}
