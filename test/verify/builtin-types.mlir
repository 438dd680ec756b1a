// Malformed builtin types get the diagnostics mlir-opt gives, at the same
// place: both tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics --allow-unregistered-dialect
// RUN: mlir-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

// expected-error@+1 {{expected non-function type}}
func.func private @not_a_type(%x: float32)

// -----

// expected-error@+1 {{expected non-function type}}
"t.op"() : () -> tensor<-4xf32>

// -----

// expected-error@+1 {{invalid integer width}}
func.func private @width(i99999999999)

// -----

// expected-error@+1 {{integer bitwidth is limited to 16777215 bits}}
func.func private @width(si20000000)

// -----

// expected-error@+1 {{invalid tensor element type}}
func.func private @elem(tensor<2xmemref<2xf32>>)

// -----

// expected-error@+1 {{invalid tensor element type}}
func.func private @elem(tensor<*xnone>)

// -----

// expected-error@+1 {{invalid memref element type}}
func.func private @elem(memref<4xtuple<i32>>)

// -----

// expected-error@+1 {{vector elements must be int/index/float type}}
func.func private @elem(vector<4xcomplex<f32>>)

// -----

// expected-error@+1 {{missing ']' closing scalable dimension}}
func.func private @scalable(vector<2x[8xf32>)

// -----

// Spaces around the dimension separator are allowed.
func.func private @spaced(vector<2 x [4] x i8>, tensor<? x 3 xf32>)
// expected-error@+1 {{expected 'x' in dimension list}}
func.func private @unspaced(tensor<3 4xf32>)

// -----

// expected-error@+1 {{invalid element type for complex}}
func.func private @complex(complex<index>)

// -----

// expected-error@+1 {{expected '<' in complex type}}
func.func private @complex(complex f32)

// -----

// expected-error@+1 {{expected '>' in complex type}}
func.func private @complex(complex<f64, f64>)

// -----

// expected-error@+1 {{expected '<' in tuple type}}
func.func private @tuple(tuple)

// -----

// expected-error@+1 {{expected '>' in tuple type}}
func.func private @tuple(tuple<i1, i2)

// -----

// expected-error@+1 {{invalid type identifier}}
func.func private @f(!<"x">)

// -----

// expected-error@+1 {{unsupported memory space Attribute}}
func.func private @f(memref<4xf32, f16>)

// -----

// expected-error@+1 {{@ identifier expected to start with letter or '_'}}
func.func private @9lives()

// -----

// expected-error@+1 {{expected at least one result for cast operation}}
"builtin.unrealized_conversion_cast"() : () -> ()


// -----

// expected-error@+1 {{multiple memory spaces specified in memref type}}
func.func private @f(memref<4xf32, 1, 2>)

// -----

// expected-error@+1 {{expected memory space to be last in memref type}}
func.func private @f(memref<4xf32, affine_map<(d0) -> (d0)>, 1, affine_map<(d0) -> (d0)>>)

// -----

// expected-error@+1 {{expected list element}}
func.func private @f(memref<4xf32, >)
