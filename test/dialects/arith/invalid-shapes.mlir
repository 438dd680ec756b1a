// The casts and select check shapes in mlir-opt's order, with its
// messages; both tools run every chunk.
// RUN: irc %s --split-input-file --verify-diagnostics
// RUN: mlir-opt %s --split-input-file --verify-diagnostics

func.func @f(%x: tensor<3xi8>) {
  // expected-error@+1 {{'arith.extui' op failed to verify that input and output have the same tensor dimensions}}
  %0 = arith.extui %x : tensor<3xi8> to tensor<?xi16>
  return
}

// -----

func.func @f(%x: tensor<3xi8>) {
  // expected-error@+1 {{'arith.extui' op failed to verify that input and output have the same tensor dimensions}}
  %0 = "arith.extui"(%x) : (tensor<3xi8>) -> vector<3xi16>
  return
}

// -----

func.func @f(%x: vector<3xf32>) {
  // expected-error@+1 {{'arith.fptosi' op requires the same shape for all operands and results}}
  %0 = arith.fptosi %x : vector<3xf32> to vector<[3]xi32>
  return
}

// -----

func.func @f(%x: tensor<f32>) {
  // expected-error@+1 {{'arith.truncf' op requires the same shape for all operands and results}}
  %0 = "arith.truncf"(%x) : (tensor<f32>) -> f16
  return
}

// -----

func.func @f(%x: tensor<3xf16, "a">) {
  // expected-error@+1 {{'arith.extf' op operand type 'tensor<3xf16, "a">' and result type 'tensor<3xf32, "b">' are cast incompatible}}
  %0 = arith.extf %x : tensor<3xf16, "a"> to tensor<3xf32, "b">
  return
}

// -----

func.func @f(%c: vector<2xi1>, %x: vector<3xf32>) {
  // expected-error@+1 {{'arith.select' op failed to verify that condition is signless i1 or has matching shape}}
  %0 = arith.select %c, %x, %x : vector<2xi1>, vector<3xf32>
  return
}

// -----

func.func @f(%c: tensor<3xi1, "b">, %x: tensor<3xf32, "a">) {
  // expected-error@+1 {{'arith.select' op expected condition type to have the same shape as the result type}}
  %0 = arith.select %c, %x, %x : tensor<3xi1, "b">, tensor<3xf32, "a">
  return
}

// -----

func.func @f() {
  %ok = arith.constant dense<[7, 7]> : vector<[2]xi8>
  // expected-error@+1 {{'arith.constant' op intializing scalable vectors with elements attribute is not supported unless it's a vector splat}}
  %0 = arith.constant dense<[7, 8]> : vector<[2]xi8>
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{expected attribute value}}
  %0 = arith.constant
  return
}
