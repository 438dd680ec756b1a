// RUN: irc %s --pass-pipeline='builtin.module(func.func(dce))' | FileCheck %s

// Unused pure ops go, chains of them too; ops with effects stay.
// CHECK-LABEL: func.func @f(
// CHECK-NOT:     arith.muli
// CHECK-NOT:     arith.addi
// CHECK:         call @effect
// CHECK-NEXT:    return
func.func @f(%x: i32) -> i32 {
  %0 = arith.muli %x, %x : i32
  %1 = arith.addi %0, %x : i32
  call @effect() : () -> ()
  return %x : i32
}
func.func private @effect()
