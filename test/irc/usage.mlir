// Command-line mistakes exit with status 2 and a message naming them.
// RUN: irc %s --no-such-flag > %t 2>&1; echo "exit $?" >> %t
// RUN: irc %S/Inputs/does-not-exist.mlir >> %t 2>&1; echo "exit $?" >> %t
// RUN: irc %s %s >> %t 2>&1; echo "exit $?" >> %t
// RUN: irc %s --emit=bogus >> %t 2>&1; echo "exit $?" >> %t
// RUN: FileCheck %s < %t
// CHECK:      irc: flag provided but not defined: -no-such-flag
// CHECK-NEXT: exit 2
// CHECK-NEXT: irc: cannot read input file {{.*}}does-not-exist.mlir: no such file or directory
// CHECK-NEXT: exit 2
// CHECK-NEXT: irc: expected one input file, got 2
// CHECK-NEXT: exit 2
// CHECK-NEXT: irc: unknown --emit kind "bogus" (want mlir, llvm or ptx)
// CHECK-NEXT: exit 2

// Flags may come before or after the file; stdin is read for - or no file.
// RUN: irc --print-op-generic %s > %t.a
// RUN: irc %s --print-op-generic > %t.b
// RUN: irc --print-op-generic - < %s > %t.c
// RUN: irc --print-op-generic < %s > %t.d
// RUN: irc %s -o %t.e --print-op-generic
// RUN: diff %t.a %t.b && diff %t.a %t.c && diff %t.a %t.d && diff %t.a %t.e

// RUN: irc --version | FileCheck %s --check-prefix=VERSION
// RUN: irc version | FileCheck %s --check-prefix=VERSION
// VERSION: irc version

func.func @f() {
  return
}
