// RUN: irc --allow-unregistered-dialect %s | FileCheck %s
// RUN: irc --allow-unregistered-dialect %s | irc --allow-unregistered-dialect | FileCheck %s
// RUN: irc --allow-unregistered-dialect %s | mlir-opt --allow-unregistered-dialect | FileCheck %s
// RUN: irc --allow-unregistered-dialect %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s

// CHECK-LABEL: func.func @public(
// CHECK-SAME:    %{{.*}}: i32 {my.arg}, %{{.*}}: f32) -> (i32 {my.res = 1 : i64})
// CHECK-SAME:    attributes {my.fn}
func.func @public(%a: i32 {my.arg}, %b: f32) -> (i32 {my.res = 1}) attributes {my.fn} {
  // CHECK: %[[R:.*]]:2 = call @pair(%{{.*}}) : (i32) -> (i32, i32)
  %0:2 = call @pair(%a) : (i32) -> (i32, i32)
  // CHECK: return %[[R]]#1 : i32
  return %0#1 : i32
}

// CHECK: func.func private @pair(%{{.*}}: i32) -> (i32, i32)
func.func private @pair(%a: i32) -> (i32, i32) {
  return %a, %a : i32, i32
}

// CHECK: func.func private @declaration(i32, tensor<?xf32>) -> f64
func.func private @declaration(i32, tensor<?xf32>) -> f64

// CHECK-LABEL: func.func @no_results()
// CHECK-NEXT:    return
// CHECK-NEXT:  }
func.func @no_results() {
  return
}

// Multiple blocks and successors.
// CHECK-LABEL: func.func @blocks(
// CHECK:         {{"?}}cf.br{{.*}}^bb1
// CHECK:       ^bb1:
func.func @blocks(%a: i32) -> i32 {
  "cf.br"()[^bb1] : () -> ()
^bb1:
  return %a : i32
}
