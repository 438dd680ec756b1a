// RUN: not irc %s --split-input-file | FileCheck %s
// RUN: not irc --split-input-file %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: not irc %s --split-input-file --allow-unregistered-dialect 2>&1 >/dev/null | FileCheck %s --check-prefix=ERR

// Each chunk is a module of its own, printed in order and separated by the
// same marker; the chunk with an error prints nothing, and its diagnostic
// names its line in the whole file.

// CHECK-LABEL: module {
// CHECK-NEXT:    func.func @first()
// CHECK:       // -----
// CHECK-NEXT:  module {
// CHECK-NEXT:    func.func @second()
// CHECK:       // -----
// CHECK-NOT:   module
// GENERIC:     "builtin.module"() ({
// GENERIC:     "func.func"() <{function_type = () -> (), sym_name = "first"}>
// GENERIC:     // -----
// GENERIC:     "func.func"() <{function_type = () -> (), sym_name = "second"}>
func.func @first() {
  return
}

// -----

func.func @second() {
  return
}

// -----

func.func @third() {
  // ERR: split-input-file.mlir:[[@LINE+1]]:7: error: use of undeclared SSA value name
  "x"(%undefined) : (i32) -> ()
  return
}
