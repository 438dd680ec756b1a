// Comparison predicates and operands get mlir-opt's diagnostics; both
// tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics

func.func @f(%a: i64) -> i1 {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'predicate'}}
  %0 = arith.cmpi lt, %a, %a : i64
  return %0 : i1
}

// -----

func.func @f(%a: f64) -> i1 {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values}}
  %0 = arith.cmpf %a, %a : f64
  return %0 : i1
}

// -----

func.func @f(%a: f64) -> i1 {
  %0 = arith.cmpf "ult", %a, %a : f64
  // expected-error@+1 {{'arith.cmpi' 'lhs' must be signless-integer-like, but got 'f64'}}
  %1 = arith.cmpi sle, %a, %a : f64
  return %0 : i1
}

// -----

func.func @f(%a: i16) -> i1 {
  // expected-error@+1 {{'arith.cmpi' op attribute 'predicate' failed to satisfy constraint: allowed 64-bit signless integer cases: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
  %0 = "arith.cmpi"(%a, %a) {predicate = 10} : (i16, i16) -> i1
  return %0 : i1
}

// -----

func.func @f(%a: f16) -> i1 {
  // expected-error@+1 {{'arith.cmpf' op requires attribute 'predicate'}}
  %0 = "arith.cmpf"(%a, %a) : (f16, f16) -> i1
  return %0 : i1
}

// -----

func.func @f(%a: vector<2xf16>, %b: vector<3xf16>) -> vector<2xi1> {
  // expected-error@+1 {{'arith.cmpf' op requires all operands to have the same type}}
  %0 = "arith.cmpf"(%a, %b) {predicate = 1} : (vector<2xf16>, vector<3xf16>) -> vector<2xi1>
  return %0 : vector<2xi1>
}

// -----

// A block whose op failed is not blamed for lacking a terminator as well.
func.func @f(%a: i8) {
  // expected-error@+1 {{'arith.cmpf' op operand #0 must be floating-point-like, but got 'i8'}}
  %0 = "arith.cmpf"(%a, %a) {predicate = 1} : (i8, i8) -> i1
}

// -----

func.func @f(%a: i32) -> i32 {
  // expected-error@+1 {{expected ':'}}
  %0 = arith.muli %a, %a, %a : i32
  return %0 : i32
}

// -----

func.func @f(%a: i32) -> i32 {
  // expected-error@+1 {{expected SSA operand}}
  %0 = arith.muli %a, : i32
  return %0 : i32
}
