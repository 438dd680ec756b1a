// The verifier's structural checks, as in MLIR.
// RUN: irc %s --split-input-file --verify-diagnostics --allow-unregistered-dialect
// RUN: mlir-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

func.func @use_before_def(%a: i32) {
  // expected-error@+1 {{operand #0 does not dominate this use}}
  %0 = arith.addi %1, %a : i32
  // expected-note@+1 {{operand defined here}}
  %1 = arith.constant 1 : i32
  return
}

// -----

func.func @return_not_last() {
  // expected-error@+1 {{'func.return' op must be the last operation in the parent block}}
  "func.return"() : () -> ()
  // The block's end is not blamed too (mlir-opt stops at the first error).
  %0 = arith.constant 1 : i32
}

// -----

func.func @no_terminator() {
  // expected-error@+1 {{block with no terminator}}
  %0 = arith.constant 1 : i32
}

// -----

func.func @unknown_successor() {
  // expected-error@+1 {{reference to an undefined block}}
  "cf.br"()[^nowhere] : () -> ()
}

// -----

func.func @redefined(%a: i32) {
  // expected-note@+1 {{previously defined here}}
  %0 = arith.addi %a, %a : i32
  // expected-error@+1 {{redefinition of SSA value '%0'}}
  %0 = arith.addi %a, %a : i32
  return
}

// -----

// expected-note@+1 {{prior use here}}
func.func @type_mismatch(%a: i32) {
  // expected-error@+1 {{use of value '%a' expects different type than prior uses: 'i64' vs 'i32'}}
  %0 = arith.addi %a, %a : i64
  return
}

// -----

// A region may name a value its enclosing region defines later; the
// verifier then finds that the definition does not dominate the use.
func.func @later_in_parent() {
  "t.r"() ({
    // expected-error@+1 {{operand #0 does not dominate this use}}
    "t.use"(%x) : (i32) -> ()
  }) : () -> ()
  // expected-note@+1 {{operand defined here (op in a parent region)}}
  %x = arith.constant 1 : i32
  return
}

// -----

// expected-note@+1 {{operand defined as a block argument (block #1 in a parent region)}}
func.func @arg_of_later_block() {
^bb0:
  "t.r"() ({
    // expected-error@+1 {{operand #0 does not dominate this use}}
    "t.use"(%a) : (i32) -> ()
  }) : () -> ()
  "t.br"()[^bb1] : () -> ()
^bb1(%a: i32):
  return
}
