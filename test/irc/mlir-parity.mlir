// RUN: irc %s --allow-unregistered-dialect --print-op-generic > %t.ours
// RUN: FileCheck %s < %t.ours
// RUN: mlir-opt --allow-unregistered-dialect --mlir-print-op-generic %s > %t.want
// RUN: mlir-opt --allow-unregistered-dialect --mlir-print-op-generic %t.ours > %t.got
// RUN: diff %t.want %t.got
// RUN: irc %s --allow-unregistered-dialect | irc --allow-unregistered-dialect --print-op-generic | diff %t.ours -

// Round trips that once changed a value or gave text mlir-opt 19 refused
// (issue 24): what mlir-opt reads from our generic print is what it reads
// from the source.

// Integers wider than 64 bits keep every bit; signless ones print signed,
// as upstream: 2^67 - 1 : i67 is -1.
// CHECK: value = 170141183460469231731687303715884105727 : i128
// CHECK: value = -170141183460469231731687303715884105728 : i128
// CHECK: value = -1 : i67
// CHECK: value = dense<[1, 73786976294838206463]> : tensor<2xi67>
// CHECK: value = dense<-1> : tensor<2x2xi67>
// CHECK: {a = 340282366920938463463374607431768211455 : ui128, b = dense<{{\[\[}}5, -5]]> : tensor<1x2xsi100>}
func.func @wide() {
  %0 = arith.constant 170141183460469231731687303715884105727 : i128
  %1 = arith.constant -170141183460469231731687303715884105728 : i128
  %2 = arith.constant 147573952589676412927 : i67
  %3 = arith.constant dense<[1, 73786976294838206463]> : tensor<2xi67>
  %4 = arith.constant dense<[[-1, 147573952589676412927], [-1, -1]]> : tensor<2x2xi67>
  "test.wide"() {a = 340282366920938463463374607431768211455 : ui128, b = dense<[[5, -5]]> : tensor<1x2xsi100>} : () -> ()
  return
}

// f80 and f128 infinities and NaNs keep their own encodings; bit
// patterns float64 cannot hold (NaN payloads) are kept as written.
// CHECK: {a = 0x7FFF8000000000000000 : f80, b = 0xFFFFC000000000000000 : f80, c = 0x7FFFC000000000000001 : f80, d = 1.000000e+00 : f80, e = 0x7FFF0000000000000000000000000000 : f128, f = 0xFFFF8000000000000000000000000000 : f128, g = 1.0e4000 : f80}
"test.floats"() {a = 0x7FFF8000000000000000 : f80, b = 0xFFFFC000000000000000 : f80, c = 0x7FFFC000000000000001 : f80, d = 0x3FFF8000000000000000 : f80, e = 0x7FFF0000000000000000000000000000 : f128, f = 0xFFFF8000000000000000000000000000 : f128, g = 1.0e4000 : f80} : () -> ()

// A dialect attribute may carry a type.
// CHECK: {a = #foo.attr : i32, b = #foo<"bar"> : index, c = #foo.x<1> : tensor<2xf32>}
"test.typed"() {a = #foo.attr : i32, b = #foo<"bar"> : index, c = #foo.x<1> : tensor<2xf32>} : () -> ()

// si1 holds 0 and -1: -1 stays -1 (it once printed as 1, out of range).
// CHECK: {a = -1 : si1, b = 0 : si1, c = 1 : ui1, d = true}
"test.si1"() {a = -1 : si1, b = 0 : si1, c = 1 : ui1, d = true} : () -> ()

// An unregistered op's regions may be graph regions: uses before
// definitions are accepted.
// CHECK: "test.graph"() ({
// CHECK-NEXT: %[[A:.*]] = "test.use"(%[[B:.*]]) : (i32) -> i32
// CHECK-NEXT: %[[B]] = "test.def"(%[[A]]) : (i32) -> i32
"test.graph"() ({
  %1 = "test.use"(%0) : (i32) -> i32
  %0 = "test.def"(%1) : (i32) -> i32
}) : () -> ()

// A function in a module nested in a function continues the outer
// numbering: mlir-opt's generic parser would see %arg0 redefined.
// CHECK: sym_name = "outer"
// CHECK-NEXT: ^bb0(%arg0: i32):
// CHECK: sym_name = "inner"
// CHECK-NEXT: ^bb0(%arg1: i32):
func.func @outer(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  "builtin.module"() ({
    func.func @inner(%b: i32) -> i32 {
      %1 = arith.muli %b, %b : i32
      return %1 : i32
    }
  }) : () -> ()
  %2 = arith.addi %0, %a : i32
  return %2 : i32
}

// Hexadecimal literals of the 8-bit float types and tf32 are the type's own
// bits (they were read as float64's: 0x1 : f8E4M3FN became 4.9e-324), and
// arith.constant takes dense complex tensors, as MLIR's does (session 8,
// found by tools/mlirparity -roundtrip).
// CHECK-LABEL: sym_name = "narrow"
// CHECK: value = 1.953130e-03 : f8E4M3FN
// CHECK: value = 0x7F : f8E4M3FN
// CHECK: value = 0xFD : f8E5M2
// CHECK: value = 1.147940e-41 : tf32
// CHECK: value = dense<[1.953130e-03, 0x7F]> : tensor<2xf8E4M3FN>
// CHECK: value = dense<[(1.000000e+00,2.000000e+00), (3.000000e+00,-4.500000e+00)]> : tensor<2xcomplex<f32>>
func.func @narrow() {
  %0 = arith.constant 0x1 : f8E4M3FN
  %1 = arith.constant 0x7F : f8E4M3FN
  %2 = arith.constant 0xFD : f8E5M2
  %3 = arith.constant 0x1 : tf32
  %4 = arith.constant dense<"0x017F"> : tensor<2xf8E4M3FN>
  %5 = arith.constant dense<[(1.0, 2.0), (3.0, -4.5)]> : tensor<2xcomplex<f32>>
  return
}
