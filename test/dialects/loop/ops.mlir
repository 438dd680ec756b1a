// RUN: irc %s | irc | FileCheck %s
// RUN: irc %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: irc %s --print-op-generic | mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | irc | FileCheck %s
// REQUIRES: mlir-opt

// Every loop op round-trips through the printer and parser, in the custom
// and the generic form, and through mlir-opt as generic unregistered ops.

// CHECK-LABEL: func.func @buffers
// GENERIC-LABEL: sym_name = "buffers"
func.func @buffers(%m: memref<4x?xf32>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: %[[A:.*]] = loop.alloc(%{{.*}}) {alignment = 64 : i64} : memref<4x?xf32>
  // GENERIC: "loop.alloc"(%{{.*}}) <{alignment = 64 : i64}> : (index) -> memref<4x?xf32>
  %a = loop.alloc(%n) {alignment = 64 : i64} : memref<4x?xf32>
  // CHECK: loop.alloc() : memref<8xi1>
  %b = "loop.alloc"() : () -> memref<8xi1>
  // CHECK: %[[D:.*]] = loop.dim %{{.*}}, 1 : memref<4x?xf32>
  // GENERIC: "loop.dim"(%{{.*}}) <{index = 1 : i64}> : (memref<4x?xf32>) -> index
  %d = loop.dim %m, 1 : memref<4x?xf32>
  // CHECK: %[[V:.*]] = loop.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x?xf32>
  // GENERIC: "loop.load"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<4x?xf32>, index, index) -> f32
  %v = loop.load %m[%c0, %c1] : memref<4x?xf32>
  // CHECK: loop.store %[[V]], %[[A]][%{{.*}}, %{{.*}}] : memref<4x?xf32>
  // GENERIC: "loop.store"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (f32, memref<4x?xf32>, index, index) -> ()
  loop.store %v, %a[%c0, %c1] : memref<4x?xf32>
  // CHECK: loop.dealloc %[[A]] : memref<4x?xf32>
  // GENERIC: "loop.dealloc"(%{{.*}}) : (memref<4x?xf32>) -> ()
  loop.dealloc %a : memref<4x?xf32>
  loop.dealloc %b : memref<8xi1>
  // CHECK: return %[[D]] : index
  return %d : index
}

// CHECK-LABEL: func.func @control
func.func @control(%m: memref<?x?xf32>, %c: i1) -> (f32, f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %n = loop.dim %m, 0 : memref<?x?xf32>
  // CHECK: "loop.for"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) ({
  // CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: f32):
  // CHECK: loop.yield %{{.*}} : f32
  // CHECK-NEXT: }) : (index, index, index, f32) -> f32
  %s = "loop.for"(%c0, %n, %c1, %z) ({
  ^bb0(%i: index, %acc: f32):
    %x = loop.load %m[%i, %c0] : memref<?x?xf32>
    %y = arith.addf %acc, %x : f32
    loop.yield %y : f32
  }) : (index, index, index, f32) -> f32
  // CHECK: "loop.parallel"({{.*}}) <{operandSegmentSizes = array<i32: 2, 2, 2, 1>}> ({
  // CHECK: "loop.reduce"(%{{.*}}) ({
  // CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
  // CHECK: }) : (f32) -> ()
  // CHECK: }) : (index, index, index, index, index, index, f32) -> f32
  %p = "loop.parallel"(%c0, %c0, %n, %n, %c1, %c1, %z) <{operandSegmentSizes = array<i32: 2, 2, 2, 1>}> ({
  ^bb0(%i: index, %j: index):
    %x = loop.load %m[%i, %j] : memref<?x?xf32>
    "loop.reduce"(%x) ({
    ^bb0(%l: f32, %r: f32):
      %t = arith.maximumf %l, %r : f32
      loop.yield %t : f32
    }) : (f32) -> ()
  }) : (index, index, index, index, index, index, f32) -> f32
  // A nest without reductions: loop.reduce has no operands and no regions.
  // CHECK: "loop.reduce"() : () -> ()
  "loop.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    loop.store %z, %m[%i, %i] : memref<?x?xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  // CHECK: "loop.if"(%{{.*}}) ({
  // CHECK: }, {
  // CHECK: }) : (i1) -> f32
  %r = "loop.if"(%c) ({
    loop.yield %s : f32
  }, {
    loop.yield %p : f32
  }) : (i1) -> f32
  // An if without results may leave its else region empty.
  // CHECK: "loop.if"(%{{.*}}) ({
  // CHECK: }, {
  // CHECK-NEXT: }) : (i1) -> ()
  "loop.if"(%c) ({
    loop.store %z, %m[%c0, %c0] : memref<?x?xf32>
    loop.yield
  }, {
  }) : (i1) -> ()
  return %s, %p, %r : f32, f32, f32
}
