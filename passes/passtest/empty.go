package passtest

import (
	_ "embed"
	"regexp"
)

//go:embed emptytensors.mlir
var emptyTensors string

// emptyFunc matches one function of emptytensors.mlir: from "func.func @"
// at the beginning of a line to the first "}" alone on a line.
var emptyFunc = regexp.MustCompile(`(?ms)^func\.func @(\w+).*?^}$`)

// EmptyTensorPrograms returns the programs of emptytensors.mlir, one
// function each: reductions over and keeping empty axes, softmax,
// log_softmax, logsumexp and normalizations over zero rows and zero
// columns, matmuls with K = 0 (zeros, then a bias) and with M or N = 0,
// views with an empty operand, and attention with no queries or no keys.
// Check each with CheckSemantics: a lowering must run them with the
// interpreter's results, reading no element out of bounds and dividing by
// no empty extent.
func EmptyTensorPrograms() []*Program {
	var out []*Program
	for _, m := range emptyFunc.FindAllStringSubmatch(emptyTensors, -1) {
		out = append(out, &Program{Source: m[0] + "\n", Func: m[1]})
	}
	return out
}
