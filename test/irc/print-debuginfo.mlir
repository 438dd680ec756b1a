// RUN: irc %s --print-debuginfo | FileCheck %s
// CHECK: return loc({{.*}}print-debuginfo.mlir":5:3)
// CHECK: } loc({{.*}}print-debuginfo.mlir":4:1)
func.func @f() {
  return
}
