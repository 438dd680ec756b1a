// Ops of unknown dialects are errors unless --allow-unregistered-dialect.
// RUN: not irc %s 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: irc %s --allow-unregistered-dialect | FileCheck %s
// RUN: irc %s --allow-unregistered-dialect | mlir-opt --allow-unregistered-dialect | FileCheck %s

// ERR: allow-unregistered-dialect.mlir:[[@LINE+4]]:8: error: {{.*}}'mydialect.op'{{.*}}--allow-unregistered-dialect
// CHECK: func.func @f
// CHECK-NEXT: "mydialect.op"() {attr = 3 : i64} : () -> i32
func.func @f() -> i32 {
  %0 = "mydialect.op"() {attr = 3} : () -> i32
  return %0 : i32
}
