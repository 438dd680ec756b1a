// distinct[] and dense_resource<> attributes get mlir-opt's diagnostics;
// both tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics

#d0 = distinct[3]<"a">
#d1 = distinct[3]<"a">
// expected-error@+1 {{referenced attribute does not match previous definition: "a"}}
#d2 = distinct[3]<"b">

// -----

// expected-error@+1 {{expected '[' after 'distinct'}}
#d = distinct(1)<unit>

// -----

// expected-error@+1 {{expected distinct ID}}
#d = distinct[x]<unit>

// -----

// expected-error@+1 {{expected an unsigned 64-bit integer}}
#d = distinct[99999999999999999999]<unit>

// -----

// expected-error@+1 {{expected ']' to close distinct ID}}
#d = distinct[1>

// -----

// expected-error@+1 {{expected '<' after distinct ID}}
#d = distinct[1] unit

// -----

// expected-error@+1 {{expected '>' to close distinct attribute}}
#d = distinct[1]<unit unit>

// -----

// expected-error@+1 {{expected attribute}}
#d = distinct[1]<nonsense>

// -----

// expected-error@+1 {{expected '>'}}
#r = dense_resource<blob : tensor<2xf32>

// -----

// expected-error@+1 {{expected ':'}}
#r = dense_resource<blob>

// -----

// expected-error@+1 {{`dense_resource` expected a shaped type}}
#r = dense_resource<blob> : f32
