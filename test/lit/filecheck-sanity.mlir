// Checks the lit driver itself (test/lit_test.go); it needs no irc.
// RUN: echo "hello from %s" | FileCheck %s
// CHECK: hello from {{.*}}/test/lit/filecheck-sanity.mlir
//
// Continuation lines, %t, %T and %%:
// RUN: printf '%%s\n' a 'b 100%%' > %t && test -d %T \
// RUN:   && FileCheck --check-prefix=TMP %s < %t
// TMP: a
// TMP-NEXT: b 100%
//
// The working directory is the test's directory; not and count work:
// RUN: test -f filecheck-sanity.mlir && test "$PWD" = %S
// RUN: not false && printf 'x\ny\n' | count 2
// RUN: not FileCheck --check-prefix=NOPE %s < /dev/null
// NOPE: this never matches
