// RUN: not irc %s --verify-diagnostics 2>&1 | FileCheck %s

// A diagnostic nobody expected, and an expectation nothing met, each fail
// the run with MLIR's messages.

func.func @f(%a: i32) -> i64 {
  // CHECK: verify-diagnostics-fail.mlir:[[@LINE+1]]:3: error: unexpected error: {{.*}}doesn't match function result type ('i64')
  return %a : i32
}

// CHECK: verify-diagnostics-fail.mlir:[[@LINE+1]]:4: error: expected error "this never happens" was not produced
// expected-error@+1 {{this never happens}}
func.func @g() {
  return
}
