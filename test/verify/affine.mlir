// affine_map and affine_set text is checked as MLIR's parser checks it;
// both tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics

#ok = affine_map<(d0, d1)[s0] -> (d0 * s0 + d1 floordiv 4, -d1 mod s0, (d0 + 2) ceildiv 3)>
#ok_set = affine_set<(d0)[s0] : (d0 - s0 >= 0, d0 * 2 == 0)>
// expected-error@+1 {{use of undeclared identifier}}
#bad = affine_map<(d0) -> (d1)>

// -----

// expected-error@+1 {{redefinition of identifier 'a'}}
#m = affine_map<(a)[b, a] -> (a)>

// -----

// expected-error@+1 {{missing right operand of binary op}}
#m = affine_map<(d0) -> (d0 -)>

// -----

// expected-error@+1 {{missing left operand of binary op}}
#m = affine_map<(d0) -> (* d0)>

// -----

// expected-error@+1 {{no expression inside parentheses}}
#m = affine_map<(d0) -> (d0, ())>

// -----

// expected-error@+1 {{expected affine expression}}
#m = affine_map<(d0) -> (d0, :)>

// -----

// expected-error@+1 {{expected ')'}}
#m = affine_map<(d0) -> ((d0 + 1, d0)>

// -----

// expected-error@+1 {{expected '(' in affine map range}}
#m = affine_map<(d0) -> d0>

// -----

// expected-error@+1 {{expected ')' in affine map range}}
#m = affine_map<(d0) -> (d0 d0)>

// -----

// expected-error@+1 {{non-affine expression: at least one of the multiply operands has to be either a constant or symbolic}}
#m = affine_map<(d0, d1) -> ((d0 + 1) * d1)>

// -----

// expected-error@+1 {{non-affine expression: right operand of mod has to be either a constant or symbolic}}
#m = affine_map<(d0, d1)[s0] -> (s0 mod d1)>

// -----

// expected-error@+1 {{expected '(' in integer set constraint list}}
#s = affine_set<(d0) : d0 >= 0>

// -----

// expected-error@+1 {{memref layout mismatch between rank and affine map: 2 != 1}}
func.func private @f(memref<4x4xf32, affine_map<(d0) -> (d0)>>)
