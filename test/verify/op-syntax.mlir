// Malformed operations and blocks get mlir-opt's diagnostics, at the line
// where something is missing; both tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics --allow-unregistered-dialect
// RUN: mlir-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

func.func @f() {
  // expected-error@+1 {{expected ':' followed by operation type}}
  %0 = "t.a"() {x = 1}
  "t.b"() : () -> ()
}

// -----

func.func @f() {
  // expected-error@+1 {{expected valid ssa identifier}}
  %a, 7 = "t.a"() : () -> (i8, i8)
}

// -----

func.func @f() {
  // expected-error@+1 {{expected named operation to have at least 1 result}}
  %a:0 = "t.a"() : () -> (i8, i8)
}

// -----

func.func @f() {
  // expected-error@+1 {{expected '=' after SSA name}}
  %a "t.a"() : () -> i8
}

// -----

func.func @f() {
  // expected-error@+1 {{cannot name an operation with no results}}
  %a = "t.a"() : () -> ()
}

// -----

func.func @f() {
  // expected-error@+1 {{expected operation name in quotes}}
  "t.a"() : () -> () si16
}

// -----

// The error goes where the operation should have begun: after the last
// token, on the line before.
func.func @f() {
  "t.a"() : () -> ()
  // expected-error@-1 {{expected operation name in quotes}}
  @f
}

// -----

func.func @f() {
  // expected-error@+1 {{custom op 'frobnicate' is unknown (tried 'func.frobnicate' as well)}}
  frobnicate
}

// -----

func.func @f() {
  "t.r"() ({
  // expected-error@+1 {{expected SSA operand}}
  ^bb0(f32):
    "t.y"() : () -> ()
  }) : () -> ()
  return
}

// -----

func.func @f() {
  "t.r"() ({
  // expected-error@+1 {{expected ':' and type for SSA operand}}
  ^bb0(%a):
    "t.y"() : () -> ()
  }) : () -> ()
  return
}

// -----

func.func @f() {
  "t.r"() ({
  // expected-error@+1 {{expected ':' after block name}}
  ^bb0 "t.y"() : () -> ()
  }) : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{expected ')' to end region list}}
  "t.r"() ({}, {} : () -> ()
  return
}

// -----

// expected-error@+1 {{expected non-function type}}
!t =
