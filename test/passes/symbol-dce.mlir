// RUN: irc %s --pass-pipeline='builtin.module(symbol-dce)' | FileCheck %s
// RUN: irc %s --pass-pipeline='symbol-dce' | FileCheck %s

// Public functions stay, and what they call; private functions nobody
// references go.
// CHECK-LABEL: func.func @main
// CHECK:       func.func private @used
// CHECK:       func.func private @used_transitively
// CHECK-NOT:   @unused
func.func @main() {
  call @used() : () -> ()
  return
}
func.func private @used() {
  call @used_transitively() : () -> ()
  return
}
func.func private @used_transitively() {
  return
}
func.func private @unused() {
  call @unused_too() : () -> ()
  return
}
func.func private @unused_too() {
  return
}
