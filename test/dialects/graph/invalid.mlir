// RUN: irc %s --split-input-file --verify-diagnostics

func.func @f(%a: tensor<4x3xf32>, %b: tensor<5xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'graph.add' op operands 0 and 1 are not broadcast-compatible: tensor<4x3xf32> vs tensor<5xf32> (dim 1: 3 vs 5)}}
  %0 = "graph.add"(%a, %b) : (tensor<4x3xf32>, tensor<5xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{operands 0 and 1 have different element types: f32 vs f16}}
  %0 = "graph.mul"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{result #0 has type tensor<5xf32>, but the operands and attributes give tensor<4xf32>}}
  %0 = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{operand #0 (x) must be a ranked tensor of f64, f32, f16 or bf16, got tensor<4xi32>}}
  %0 = "graph.tanh"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @f(%a: tensor<4x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown attribute 'axis' (expected 'axes', 'keepdims')}}
  %0 = "graph.reduce_sum"(%a) {axis = [1]} : (tensor<4x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = "graph.reduce_max"(%a) {axes = [2]} : (tensor<4x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{axis -1 is repeated in [1 -1]}}
  %0 = "graph.reduce_min"(%a) {axes = array<i64: 1, -1>} : (tensor<4x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @f(%a: tensor<4x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'keepdims' must be a boolean (true or false), got 1 : i64}}
  %0 = "graph.reduce_mean"(%a) {axes = [1], keepdims = 1 : i64} : (tensor<4x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4x3xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{requires attribute 'axis'}}
  %0 = "graph.argmax"(%a) : (tensor<4x3xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @f(%a: tensor<4x3xf32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{cannot reshape tensor<4x3xf32> (12 elements) to [5, 2] (10 elements)}}
  %0 = "graph.reshape"(%a) {shape = [5, 2]} : (tensor<4x3xf32>) -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{perm [0 0] repeats 0}}
  %0 = "graph.transpose"(%a) {perm = [0, 0]} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{perm [1 2] entry 2 is out of range for rank 2}}
  %0 = "graph.transpose"(%a) {perm = [1, 2]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @f(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{cannot broadcast tensor<3xf32> to [2 4] (operand dim 0: 3 vs 4)}}
  %0 = "graph.broadcast_to"(%a) {shape = [2, 4]} : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{operand #1 dim 0 is 3 but operand #0 dim 0 is 2 (only the concat axis 1 may differ)}}
  %0 = "graph.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @f(%a: tensor<10xf32>) -> tensor<9xf32> {
  // expected-error @+1 {{slice [2, 11) of dim 0 is out of bounds for size 10}}
  %0 = "graph.slice"(%a) {starts = [2], limits = [11]} : (tensor<10xf32>) -> tensor<9xf32>
  return %0 : tensor<9xf32>
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'graph.matmul' op inner dimensions differ: lhs dim 1 is 3, rhs dim 0 is 4}}
  %0 = "graph.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @f(%x: tensor<2x8xf32>, %w: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{operand #1 (weight) must have shape [8] (dims 1… of tensor<2x8xf32>), got tensor<4xf32>}}
  %0 = "graph.layer_norm"(%x, %w, %w) {epsilon = 1.0e-05 : f32} : (tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'approximate' must be one of "none", "tanh", got "fast"}}
  %0 = "graph.gelu"(%a) {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{attribute 'predicate' must be one of "eq", "ne", "lt", "le", "gt", "ge", got "lte"}}
  %0 = "graph.cmp"(%a, %b) {predicate = "lte"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @f(%a: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 (cond) must be a ranked tensor of i1, got tensor<4xf32>}}
  %0 = "graph.select"(%c, %a, %a) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%q: tensor<4x16x8xf32>, %k: tensor<4x12x7xf32>) -> tensor<4x16x7xf32> {
  // expected-error @+1 {{q and k head dims differ: 8 vs 7}}
  %0 = "graph.attention"(%q, %k, %k) : (tensor<4x16x8xf32>, tensor<4x12x7xf32>, tensor<4x12x7xf32>) -> tensor<4x16x7xf32>
  return %0 : tensor<4x16x7xf32>
}

// -----

func.func @f(%x: tensor<1x4x9x9xf32>, %w: tensor<6x3x3x3xf32>) -> tensor<1x6x7x7xf32> {
  // expected-error @+1 {{weight dim 1 is 3 but the input has 4 channels in 2 groups (2 per group)}}
  %0 = "graph.conv2d"(%x, %w) {groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x7x7xf32>
  return %0 : tensor<1x6x7x7xf32>
}

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "graph.fusion"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    // expected-error @+1 {{yields 0 values but the parent fusion has 1 results}}
    "graph.yield"() : () -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A #graph.dims encoding must parse, list one size per dim and agree with
// the static sizes.
func.func @f(%a: tensor<?xf32, #graph.dims<[s0 +]>>) -> tensor<?xf32> {
  // expected-error @+1 {{'graph.exp' op operand #0: in #graph.dims<[s0 +]>: sym: parsing "s0 +" at offset 4: unexpected end}}
  %0 = "graph.exp"(%a) : (tensor<?xf32, #graph.dims<[s0 +]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @f(%a: tensor<?xf32, #graph.dims<[-5]>>) -> tensor<?xf32> {
  // expected-error @+1 {{'graph.exp' op operand #0: in #graph.dims<[-5]>: size -5 is negative}}
  %0 = "graph.exp"(%a) : (tensor<?xf32, #graph.dims<[-5]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @f(%a: tensor<?xf32, #graph.dims<[floordiv(s0, 0)]>>) -> tensor<?xf32> {
  // expected-error-re @+1 {{'graph.exp' op operand #0: {{.*}}floordiv by zero}}
  %0 = "graph.exp"(%a) : (tensor<?xf32, #graph.dims<[floordiv(s0, 0)]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @f(%a: tensor<?x4xf32, #graph.dims<[s0]>>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'graph.exp' op operand #0: #graph.dims<[s0]> has 1 sizes for a tensor of rank 2}}
  %0 = "graph.exp"(%a) : (tensor<?x4xf32, #graph.dims<[s0]>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @f(%a: tensor<?x4xf32>) -> tensor<?x4xf32, #graph.dims<[s0, 8]>> {
  // expected-error @+1 {{'graph.exp' op result #0: #graph.dims<[s0, 8]> gives dim 1 the size 8, but the type's is 4}}
  %0 = "graph.exp"(%a) : (tensor<?x4xf32>) -> tensor<?x4xf32, #graph.dims<[s0, 8]>>
  return %0 : tensor<?x4xf32, #graph.dims<[s0, 8]>>
}

// -----

func.func @f(%a: tensor<?xf32, #graph.dims<[s0*4611686018427387904*4]>>) -> tensor<?xf32> {
  // expected-error-re @+1 {{'graph.exp' op operand #0: {{.*}}integer overflow: the expression's coefficients exceed 2^62}}
  %0 = "graph.exp"(%a) : (tensor<?xf32, #graph.dims<[s0*4611686018427387904*4]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A reshape to dynamic sizes says how they follow from the operand's.
func.func @f(%a: tensor<?x4xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'graph.reshape' op reshape to tensor<?x3xf32> needs the 'shape' attribute (with -1 for the size to infer) to say how its dynamic sizes follow from the operand's}}
  %0 = "graph.reshape"(%a) : (tensor<?x4xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}
