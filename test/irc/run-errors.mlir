// irc run's argument checks name the argument, the expected type and what
// the .npy file holds.
// RUN: irc run %s --input %S/Inputs/i.npy > %t 2>&1; echo "exit $?" >> %t
// RUN: irc run %s --input %S/Inputs/v.npy --input %S/Inputs/v.npy >> %t 2>&1; echo "exit $?" >> %t
// RUN: irc run %s >> %t 2>&1; echo "exit $?" >> %t
// RUN: irc run %s --random-inputs 1 --func missing >> %t 2>&1; echo "exit $?" >> %t
// RUN: FileCheck %s < %t
// CHECK:      irc: run: @main: argument 0 ({{.*}}i.npy): expected tensor<4xf32> (dtype float32, shape (4,)), got dtype int32, shape (2, 2)
// CHECK-NEXT: exit 2
// CHECK-NEXT: irc: run: @main: takes 1 argument, got 2 --input files
// CHECK-NEXT: exit 2
// CHECK-NEXT: irc: run: @main: takes 1 argument, got 0 --input files (or use --random-inputs SEED)
// CHECK-NEXT: exit 2
// CHECK-NEXT: irc: run: {{.*}}run-errors.mlir: no function named @missing (functions: @main)
// CHECK-NEXT: exit 2

// RUN: irc run %s --input %S/Inputs/v.npy | FileCheck %s --check-prefix=OK
// OK: result 0: shape (4,) dtype float32 sum -2.25 hash {{[0-9a-f]+}} values [-1 2 -3 -0.25]
func.func @main(%v: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.negf %v : tensor<4xf32>
  return %0 : tensor<4xf32>
}
