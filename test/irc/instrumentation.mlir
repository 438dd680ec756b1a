// The instrumentation flags report on standard error, leaving standard
// output to the IR.
// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse,canonicalize))' --print-ir-after-all 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=AFTER
// AFTER:      IR Dump After {{.*}}cse
// AFTER-SAME: 'func.func' operation: @f
// AFTER-NEXT: func.func @f
// AFTER:      IR Dump After {{.*}}canonicalize
// AFTER-NOT:  IR Dump Before

// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse))' --print-ir-before-all 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=BEFORE
// BEFORE:     IR Dump Before {{.*}}cse
// BEFORE:     arith.muli
// BEFORE:     arith.muli
// BEFORE-NOT: IR Dump After

// Only cse changes @f; canonicalize then finds nothing to do.
// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse,canonicalize))' --print-ir-after-change 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=CHANGE
// CHANGE:     IR Dump After {{.*}}cse
// CHANGE-NOT: IR Dump After {{.*}}canonicalize

// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse,canonicalize))' --timing 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=TIMING
// TIMING:      Execution time report
// TIMING:      Total Execution Time: {{[0-9.]+}} seconds
// TIMING:      ----Wall Time----  ----Name----
// TIMING:      'func.func' Pipeline
// TIMING-NEXT:   {{[0-9.]+}} ({{ *[0-9.]+}}%) cse
// TIMING-NEXT:   {{[0-9.]+}} ({{ *[0-9.]+}}%) canonicalize
// TIMING:      Total

// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse))' --pass-statistics 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=STATS
// STATS:      Pass statistics report
// STATS:      'func.func' Pipeline
// STATS-NEXT:   cse
// STATS:        (S) 1 num-cse'd

// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse))' --trace=%t.json > /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.json
// TRACE: "traceEvents"
// TRACE: "name":{{ *}}"cse"
// TRACE: "ph":{{ *}}"X"

// The output is the same with and without instrumentation.
// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse))' > %t.plain
// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse))' --timing --print-ir-after-all --pass-statistics 2>/dev/null | diff %t.plain -

func.func @f(%a: i32) -> i32 {
  %0 = arith.muli %a, %a : i32
  %1 = arith.muli %a, %a : i32
  %2 = arith.addi %0, %1 : i32
  return %2 : i32
}
