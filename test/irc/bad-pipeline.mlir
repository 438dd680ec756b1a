// Pipeline errors are usage errors: exit status 2, one message naming the
// culprit, no output.
// RUN: irc %s --pass-pipeline='builtin.module(no-such-pass)' > %t.out 2> %t.err; echo "exit $?" >> %t.err
// RUN: FileCheck %s --check-prefix=UNKNOWN < %t.err
// RUN: count 0 < %t.out
// UNKNOWN: 'no-such-pass' does not refer to a registered pass or pass pipeline
// UNKNOWN: exit 2

// RUN: not irc %s --pass-pipeline='builtin.module(func.func(cse)' 2>&1 | FileCheck %s --check-prefix=PARENS
// PARENS: error:
// PARENS: builtin.module(func.func(cse)

// RUN: not irc %s --pass-pipeline='builtin.module(canonicalize{max-iterations=lots})' 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: max-iterations

// RUN: not irc %s --pass-pipeline='builtin.module(canonicalize{no-such-option=1})' 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OPTION
// UNKNOWN-OPTION: no-such-option

// RUN: irc %s --pass-pipeline='builtin.module(func.func(cse)' > %t.out 2>&1; test $? -eq 2
// RUN: not grep -q '^module' %t.out

func.func @f() {
  return
}
