// A parse error is a located diagnostic, exit status 1 and no output.
// RUN: irc %s > %t.out 2> %t.err; echo "exit $?" >> %t.err
// RUN: FileCheck %s < %t.err
// RUN: count 0 < %t.out
// CHECK:      parse-error.mlir:[[@LINE+5]]:{{[0-9]+}}: error:
// CHECK-NEXT: %0 = arith.addi %a : i32
// CHECK-NEXT: {{ *}}^
// CHECK:      exit 1
func.func @f(%a: i32) {
  %0 = arith.addi %a : i32
  return
}
