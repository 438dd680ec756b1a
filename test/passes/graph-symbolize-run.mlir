// A symbolized program gives the static program's results at its size,
// runs at other sizes (1 included), and refuses inputs that fail a guard.
// RUN: irc run %s --random-inputs 3 > %t
// RUN: irc %s --pass-pipeline='builtin.module(graph-symbolize-shapes)' -o %t.sym.mlir
// RUN: irc run %t.sym.mlir --random-inputs 3 --shape arg0=8x128 --shape arg1=8x128 >> %t
// RUN: irc run %t.sym.mlir --random-inputs 3 --shape arg0=1x128 --shape arg1=1x128 >> %t
// RUN: irc run %t.sym.mlir --random-inputs 3 --shape arg0=300x128 --shape arg1=300x128 >> %t
// RUN: FileCheck %s < %t
// CHECK:      result 0: shape (8, 64) dtype float32 sum [[SUM:[^ ]+]] hash [[HASH:[0-9a-f]+]]
// CHECK-NEXT: result 0: shape (8, 64) dtype float32 sum [[SUM]] hash [[HASH]]
// CHECK-NEXT: result 0: shape (1, 64) dtype float32
// CHECK-NEXT: result 0: shape (300, 64) dtype float32

// RUN: not irc run %t.sym.mlir --random-inputs 3 --shape arg0=7x128 --shape arg1=6x128 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: irc: run: @main: guard failed: arg1.shape[0] == s0 (got 6)
// RUN: not irc run %t.sym.mlir --random-inputs 3 --shape arg0=7x64 --shape arg1=7x64 2>&1 | FileCheck %s --check-prefix=INNER
// INNER: irc: run: @main: --shape arg0=(7, 64) does not fit the type tensor<?x128xf32, #graph.dims<[s0, 128]>>

func.func @main(%x: tensor<8x128xf32>, %y: tensor<8x128xf32>, %w: tensor<128x64xf32>) -> tensor<8x64xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>
  %1 = "graph.matmul"(%0, %w) : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
  %2 = "graph.tanh"(%1) : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}
