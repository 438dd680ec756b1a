package arith_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// TestVerify runs the verifier on one op per case; want is a fragment of the
// expected error, "" for a valid op. The messages follow upstream's.
func TestVerify(t *testing.T) {
	cases := []struct{ op, want string }{
		{`%0 = arith.addi %a, %a : i32`, ""},
		{`%0 = arith.addi %i, %i : index`, ""},
		{`%0 = "arith.addi"(%x, %x) : (f32, f32) -> f32`, "operand #0 must be signless-integer-like, but got 'f32'"},
		{`%0 = "arith.addf"(%a, %a) : (i32, i32) -> i32`, "operand #0 must be floating-point-like, but got 'i32'"},
		{`%0 = "arith.addi"(%a, %a) : (i32, i32) -> i64`, "requires the same type for all operands and results"},
		{`%0 = "arith.addi"(%u, %u) : (ui32, ui32) -> ui32`, "must be signless-integer-like"},
		{`%0 = "arith.addi"(%m, %m) : (memref<2xi32>, memref<2xi32>) -> memref<2xi32>`, "must be signless-integer-like"},
		{`%0 = "arith.addi"(%a) : (i32) -> i32`, "expected 2 operands, but found 1"},
		{`%0 = "arith.addf"(%x, %x) <{fastmath = #arith.fastmath<slow>}> : (f32, f32) -> f32`, "unknown fastmath flag 'slow'"},
		{`%0 = "arith.addf"(%x, %x) <{fastmath = 1 : i32}> : (f32, f32) -> f32`, "must be #arith.fastmath<...>"},
		{`%0 = "arith.negf"(%x, %x) : (f32, f32) -> f32`, "expected 1 operands"},
		{`%0 = arith.cmpi slt, %a, %a : i32`, ""},
		{`%0 = "arith.cmpi"(%a, %a) <{predicate = 10 : i64}> : (i32, i32) -> i1`, "attribute 'predicate' failed to satisfy constraint: allowed 64-bit signless integer cases: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9"},
		{`%0 = "arith.cmpi"(%a, %a) <{predicate = 1 : i64}> : (i32, i32) -> i32`, "result #0 must be bool-like, but got 'i32'"},
		{`%0 = "arith.cmpi"(%a, %a) : (i32, i32) -> i1`, "'predicate'"},
		{`%0 = "arith.cmpi"(%t, %t) <{predicate = 1 : i64}> : (tensor<2xi32>, tensor<2xi32>) -> i1`, "same shape as operands"},
		{`%0 = "arith.cmpi"(%a, %i) <{predicate = 1 : i64}> : (i32, index) -> i1`, "requires all operands to have the same type"},
		{`%0 = "arith.cmpf"(%x, %x) <{predicate = 16 : i64}> : (f32, f32) -> i1`, "cases: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15"},
		{`%0 = "arith.cmpf"(%a, %a) <{predicate = 1 : i64}> : (i32, i32) -> i1`, "must be floating-point-like"},
		{`%0 = arith.select %c, %a, %a : i32`, ""},
		{`%0 = arith.select %c, %t, %t : tensor<2xi32>`, ""},
		{`%0 = "arith.select"(%a, %a, %a) : (i32, i32, i32) -> i32`, "operand #0 must be bool-like, but got 'i32'"},
		{`%0 = "arith.select"(%c, %a, %i) : (i1, i32, index) -> i32`, "{true_value, false_value, result} have same type"},
		{`%0 = "arith.select"(%cv, %t, %t) : (vector<4xi1>, tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>`, "condition is signless i1 or has matching shape"},
		{`%0 = "arith.select"(%ce, %te2, %te2) : (tensor<2xi1, "b">, tensor<2xi32, "a">, tensor<2xi32, "a">) -> tensor<2xi32, "a">`, "same shape as the result type"},
		{`%0 = arith.extsi %a : i32 to i64`, ""},
		{`%0 = "arith.extsi"(%a) : (i32) -> i32`, "operand type 'i32' and result type 'i32' are cast incompatible"},
		{`%0 = "arith.trunci"(%a) : (i32) -> i64`, "are cast incompatible"},
		{`%0 = "arith.extf"(%x) : (f32) -> f16`, "operand type 'f32' and result type 'f16' are cast incompatible"},
		{`%0 = "arith.extf"(%h) : (f16) -> bf16`, "are cast incompatible"},
		{`%0 = "arith.truncf"(%x) <{roundingmode = 9 : i32}> : (f32) -> f16`, "'roundingmode'"},
		{`%0 = "arith.extsi"(%t) : (tensor<2xi32>) -> tensor<3xi64>`, "input and output have the same tensor dimensions"},
		{`%0 = "arith.extsi"(%t) : (tensor<2xi32>) -> vector<2xi64>`, "input and output have the same tensor dimensions"},
		{`%0 = "arith.extsi"(%v) : (vector<4xi32>) -> vector<2xi64>`, "requires the same shape for all operands and results"},
		{`%0 = "arith.index_cast"(%t0) : (tensor<index>) -> i64`, "requires the same shape for all operands and results"},
		{`%0 = "arith.index_cast"(%t0) : (tensor<index>) -> tensor<2xi64>`, "input and output have the same tensor dimensions"},
		{`%0 = "arith.extf"(%te) : (tensor<2xf32, "a">) -> tensor<2xf64, "b">`, "are cast incompatible"},
		{`%0 = "arith.extsi"(%i) : (index) -> i64`, "must be signless-fixed-width-integer-like"},
		{`%0 = "arith.index_cast"(%a) : (i32) -> i64`, "are cast incompatible"},
		{`%0 = "arith.index_cast"(%i) : (index) -> index`, "are cast incompatible"},
		{`%0 = arith.index_castui %a : i32 to index`, ""},
		{`%0 = "arith.bitcast"(%a) : (i32) -> f64`, "are cast incompatible"},
		{`%0 = arith.bitcast %h : f16 to bf16`, ""},
		{`%0 = "arith.sitofp"(%x) : (f32) -> f32`, "must be signless-fixed-width-integer-like"},
		{`%0 = "arith.fptoui"(%x) : (f32) -> f32`, "result #0 must be signless-fixed-width-integer-like"},
		{`%0 = arith.constant 1 : i32`, ""},
		{`%0 = arith.constant dense<1.0> : tensor<2xf32>`, ""},
		{`%0 = "arith.constant"() <{value = 1 : i32}> : () -> i64`, "{value, result} have same type"},
		{`%0 = "arith.constant"() <{value = 1.0 : f32}> : () -> i32`, "{value, result} have same type"},
		{`%0 = "arith.constant"() : () -> i32`, "requires attribute 'value'"},
		{`%0 = "arith.constant"() <{value = 1 : ui32}> : () -> ui32`, "integer return type must be signless"},
	}
	const sig = `(%a: i32, %x: f32, %i: index, %c: i1, %t: tensor<2xi32>, %cv: vector<4xi1>, %h: f16, %u: ui32, %m: memref<2xi32>, %v: vector<4xi32>, %t0: tensor<index>, %te: tensor<2xf32, "a">, %ce: tensor<2xi1, "b">, %te2: tensor<2xi32, "a">)`
	for _, c := range cases {
		src := "func.func @f" + sig + " {\n  " + c.op + "\n  return\n}\n"
		m := parse(t, newContext(), src)
		err := ir.Verify(m)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.op, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want error containing %q", c.op, err, c.want)
		}
	}
}
