// Alias definitions and locations get mlir-opt's diagnostics; both tools
// run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics

// expected-error@+1 {{attribute names with a '.' are reserved for dialect-defined names}}
#my.attr = 1 : i32

// -----

// expected-error@+1 {{type names with a '.' are reserved for dialect-defined names}}
!my.type = f16

// -----

// expected-error@+1 {{expected '=' in attribute alias definition}}
#a : 1

// -----

// expected-error@+1 {{expected '=' in type alias definition}}
!t f64

// -----

func.func @f() {
  // expected-error@+1 {{expected '(' in location}}
  return loc "x"
}

// -----

func.func @f() {
  // expected-error@+1 {{expected ')' in location}}
  return loc("a":1:2
}

// -----

func.func @f() {
  // expected-error@+1 {{expected location instance}}
  return loc(callsite(at "b":1:1))
}

// -----

func.func @f() {
  // expected-error@+1 {{expected 'at' in callsite location}}
  return loc(callsite("a":1:1, "b":1:1))
}

// -----

func.func @f() {
  // expected-error@+1 {{expected ')' in callsite location}}
  return loc(callsite("a":1:1 at "b":1:1]
}

// -----

func.func @f() {
  // expected-error@+1 {{expected ')' after child location of NameLoc}}
  return loc("n"("a":1:1 "b":2:2))
}

// -----

func.func @f() {
  // expected-error@+1 {{expected '>' after fused location metadata}}
  return loc(fused<"m" ["a":1:1])
}

// -----

func.func @f() {
  // expected-error@+1 {{expected '[' in fused location}}
  return loc(fused("a":1:1))
}

// -----

func.func @f() {
  // expected-error@+1 {{expected ']' in fused location}}
  return loc(fused["a":1:1, "b":1:1)
}

// -----

func.func @f() {
  // expected-error@+1 {{operation location alias was never defined}}
  return loc(#nowhere)
}

// -----

func.func @f() {
  // expected-error@+1 {{expected location, but found '"not a loc"'}}
  return loc(#str)
}
#str = "not a loc"
