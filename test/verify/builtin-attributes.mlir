// Malformed builtin attributes get the diagnostics mlir-opt gives; both
// tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics --allow-unregistered-dialect
// RUN: mlir-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

// expected-error@+1 {{elements literal must be a shaped type}}
"t.op"() {a = dense<1> : f32} : () -> ()

// -----

// expected-error@+1 {{elements literal type must have static shape}}
"t.op"() {a = dense<1> : tensor<*xi8>} : () -> ()

// -----

// expected-error@+1 {{parsed zero elements, but type ('tensor<2xf16>') expected at least 1}}
"t.op"() {a = dense<> : tensor<2xf16>} : () -> ()

// -----

// expected-error@+1 {{expected ',' between complex elements}}
"t.op"() {a = dense<(1.0 2.0)> : tensor<complex<f32>>} : () -> ()

// -----

// expected-error@+1 {{expected ')' after complex elements}}
"t.op"() {a = dense<(1, 2, 3)> : tensor<complex<i8>>} : () -> ()

// -----

// expected-error@+2 {{unexpected decimal integer literal for a floating point value}}
// expected-note@+1 {{add a trailing dot to make the literal a float}}
"t.op"() {a = 3 : bf16} : () -> ()

// -----

// expected-error@+1 {{expected floating-point elements, but parsed integer}}
"t.op"() {a = dense<[1.5, 2]> : vector<2xf64>} : () -> ()

// -----

// expected-error@+1 {{integer constant out of range for type}}
"t.op"() {a = dense<[1, 0x1FF]> : tensor<2xi8>} : () -> ()

// -----

// expected-error@+1 {{expected i1 type for 'true' or 'false' values}}
"t.op"() {a = dense<[true, false]> : tensor<2xi8>} : () -> ()

// -----

// expected-error@+1 {{expected floating-point elements, but parsed integer}}
"t.op"() {a = dense<false> : tensor<2xf32>} : () -> ()

// -----

// expected-error@+1 {{negative integer literal not valid for unsigned integer type}}
"t.op"() {a = -3 : ui16} : () -> ()

// -----

// expected-error@+1 {{expected unsigned integer elements, but parsed negative value}}
"t.op"() {a = dense<[-3]> : tensor<1xui8>} : () -> ()

// -----

// expected-error@+1 {{expected ',' or ']'}}
"t.op"() {a = [1, 2 3]} : () -> ()

// -----

// expected-error@+1 {{expected '<' after 'array'}}
"t.op"() {a = array} : () -> ()

// -----

// expected-error@+1 {{expected integer or float type, got: 'tensor<2xf32>'}}
"t.op"() {a = array<tensor<2xf32>>} : () -> ()

// -----

// expected-error@+1 {{element type bitwidth must be a multiple of 8}}
"t.op"() {a = array<i4: 1>} : () -> ()

// -----

// expected-error@+1 {{expected ':' after dense array type}}
"t.op"() {a = array<i16 1, 2>} : () -> ()

// -----

// expected-error@+1 {{expected '>' to close an array attribute}}
"t.op"() {a = array<f32: 1.0, 2.0]} : () -> ()
