package lower_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
)

// TestMatmulViewsPreserveSemantics checks that the matmuls whose operands
// come through views (read through loop.view, staged by graph-fuse,
// folded to 2-D by canonicalize) compute what the interpreter computes
// of the graph.
func TestMatmulViewsPreserveSemantics(t *testing.T) {
	gen := passtest.MatmulViewProgram(ir.F32, ir.BF16, ir.F16)
	for _, pipeline := range []string{"builtin.module(func.func(canonicalize))", "lower-to-loop"} {
		t.Run(pipeline, func(t *testing.T) { passtest.PreservesSemantics(t, pipeline, gen) })
	}
}

// TestMatmulOfWidenedReadsHalves checks that a matmul of f16 or bf16
// operands widened to f32 (graph-decompose's attention scores) reads the
// 16-bit buffers in its product, each load widened, so that the tensor
// core plans take it, that the widening is then computed by no nest, and
// that the product is still the graph's.
func TestMatmulOfWidenedReadsHalves(t *testing.T) {
	for _, elt := range []string{"bf16", "f16"} {
		src := fmt.Sprintf(`func.func @main(%%a: tensor<2x24x16x%[1]s>, %%b: tensor<2x24x16x%[1]s>) -> tensor<2x24x24xf32> {
  %%wa = "graph.cast"(%%a) : (tensor<2x24x16x%[1]s>) -> tensor<2x24x16xf32>
  %%wb = "graph.cast"(%%b) : (tensor<2x24x16x%[1]s>) -> tensor<2x24x16xf32>
  %%bt = "graph.transpose"(%%wb) <{perm = [0, 2, 1]}> : (tensor<2x24x16xf32>) -> tensor<2x16x24xf32>
  %%r = "graph.matmul"(%%wa, %%bt) : (tensor<2x24x16xf32>, tensor<2x16x24xf32>) -> tensor<2x24x24xf32>
  return %%r : tensor<2x24x24xf32>
}`, elt)
		m := passtest.Run(t, src, "lower-to-loop")
		var loads []string
		m.Walk(func(o *ir.Operation) bool {
			if o.Name() == loop.ForOp {
				for _, in := range o.Region(0).Front().Ops() {
					if in.Name() == loop.LoadOp {
						loads = append(loads, ir.ElementTypeOf(in.Operand(0).Type()).String())
					}
				}
			}
			return true
		})
		if len(loads) != 2 || loads[0] != elt || loads[1] != elt {
			t.Errorf("%s: the product loads %v, want two %s loads:\n%s", elt, loads, elt, m)
		}
		// The widening group's result is read by nothing: no nest is left
		// computing it (eraseUnreadBuffers).
		if n := countOps(m, loop.ParallelOp); n != 1 {
			t.Errorf("%s: %d nests, want the product's alone:\n%s", elt, n, m)
		}
		p := &passtest.Program{Func: "main", Source: src}
		if err := passtest.CheckSemantics(p, "lower-to-loop", 1); err != nil {
			t.Errorf("%s: %v", elt, err)
		}
	}
}

// countOps counts the ops named name in m.
func countOps(m *ir.Operation, name string) int {
	n := 0
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() == name {
			n++
		}
		return true
	})
	return n
}

// TestReadWidenedOperandStaysWhenReturned checks that a widened operand
// the function also returns is still computed into its buffer.
func TestReadWidenedOperandStaysWhenReturned(t *testing.T) {
	src := `func.func @main(%a: tensor<24x16xbf16>, %b: tensor<16x24xbf16>) -> (tensor<24x24xf32>, tensor<24x16xf32>) {
  %wa = "graph.cast"(%a) : (tensor<24x16xbf16>) -> tensor<24x16xf32>
  %wb = "graph.cast"(%b) : (tensor<16x24xbf16>) -> tensor<16x24xf32>
  %r = "graph.matmul"(%wa, %wb) : (tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<24x24xf32>
  return %r, %wa : tensor<24x24xf32>, tensor<24x16xf32>
}`
	p := &passtest.Program{Func: "main", Source: src}
	if err := passtest.CheckSemantics(p, "lower-to-loop", 1); err != nil {
		t.Fatal(err)
	}
	m := passtest.Run(t, src, "lower-to-loop")
	if n := countOps(m, loop.ParallelOp); n != 2 {
		t.Errorf("%d nests, want the product's and the returned widening's:\n%s", n, m)
	}
}
