// RUN: irc --list-passes | FileCheck %s
// CHECK: Passes:
// CHECK-DAG: canonicalize
// CHECK-DAG: max-iterations
// CHECK-DAG: cse
// CHECK-DAG: dce
// CHECK-DAG: inline
// CHECK-DAG: symbol-dce
