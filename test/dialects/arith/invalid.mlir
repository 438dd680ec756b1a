// RUN: irc %s --split-input-file --verify-diagnostics

func.func @mismatched_operands(%a: i32, %b: i64) -> i32 {
  // expected-error@+1 {{'arith.addi' op requires the same type for all operands and results}}
  %0 = "arith.addi"(%a, %b) : (i32, i64) -> i32
  return %0 : i32
}

// -----

func.func @float_op_on_ints(%a: i32) -> i32 {
  // expected-error@+1 {{'arith.addf' op operand #0 must be floating-point-like, but got 'i32'}}
  %0 = "arith.addf"(%a, %a) : (i32, i32) -> i32
  return %0 : i32
}

// -----

func.func @wrong_extension(%a: i64) -> i32 {
  // expected-error@+1 {{'arith.extsi' op operand type 'i64' and result type 'i32' are cast incompatible}}
  %0 = arith.extsi %a : i64 to i32
  return %0 : i32
}

// -----

func.func @wrong_truncation(%a: i32) -> i64 {
  // expected-error@+1 {{'arith.trunci' op operand type 'i32' and result type 'i64' are cast incompatible}}
  %0 = arith.trunci %a : i32 to i64
  return %0 : i64
}

// -----

func.func @bad_constant() -> i32 {
  // expected-error@+1 {{'arith.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "arith.constant"() <{value = 1.0 : f32}> : () -> i32
  return %0 : i32
}

// -----

func.func @bad_cmp_predicate(%a: i32) -> i1 {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge]}}
  %0 = arith.cmpi bogus, %a, %a : i32
  return %0 : i1
}

// -----

func.func @select_mismatch(%c: i1, %a: i32, %b: i64) -> i32 {
  // expected-error@+1 {{'arith.select' op failed to verify that all of {true_value, false_value, result} have same type}}
  %0 = "arith.select"(%c, %a, %b) : (i1, i32, i64) -> i32
  return %0 : i32
}
