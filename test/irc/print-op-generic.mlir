// RUN: irc %s --print-op-generic | FileCheck %s
// RUN: irc %s --print-op-generic | irc | FileCheck %s --check-prefix=PRETTY
// RUN: irc %s --print-op-generic | mlir-opt | FileCheck %s --check-prefix=PRETTY

// CHECK-LABEL: "builtin.module"() ({
// CHECK-NEXT:    "func.func"() <{function_type = (f32) -> f32, sym_name = "f"}> ({
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[C:.*]] = "arith.constant"() <{value = 2.000000e+00 : f32}> : () -> f32
// CHECK-NEXT:      %[[M:.*]] = "arith.mulf"(%[[A]], %[[C]]) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
// CHECK-NEXT:      "func.return"(%[[M]]) : (f32) -> ()
// CHECK-NEXT:    }) : () -> ()
// CHECK-NEXT:  }) : () -> ()

// PRETTY:      func.func @f(%arg0: f32) -> f32 {
// PRETTY-NEXT:   arith.constant 2.000000e+00 : f32
// PRETTY-NEXT:   arith.mulf %arg0, %{{.*}} : f32
// PRETTY-NEXT:   return
func.func @f(%x: f32) -> f32 {
  %c = arith.constant 2.0 : f32
  %0 = arith.mulf %x, %c : f32
  return %0 : f32
}
