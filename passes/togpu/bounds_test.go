package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestGatherOutOfRange checks the kernels of graph.gather (alone, fused
// with an add, on the last axis, from a table of dynamic size, in bf16)
// on random indices, some out of range, in the interpreter, which
// simulates the launches and reports any access outside a buffer: where
// the index is in range ([-n, n), negative from the end) the kernel's
// result is the graph's, elsewhere it is zero, and nothing is read
// outside the table; the graph itself reports such an index as an error.
func TestGatherOutOfRange(t *testing.T) {
	cases := []struct {
		name string
		axis int
		src  string // %t: the table, %i: the indices, %r: the result
	}{
		{"rows", 0, `func.func @main(%t: tensor<NxDxf32>, %i: tensor<Kxi64>) -> tensor<KxDxf32> {
  %r = "graph.gather"(%t, %i) <{axis = 0 : i64}> : (tensor<NxDxf32>, tensor<Kxi64>) -> tensor<KxDxf32>
  return %r : tensor<KxDxf32>
}`},
		{"rows-plus", 0, `func.func @main(%t: tensor<NxDxbf16>, %i: tensor<Kxi64>, %p: tensor<KxDxbf16>) -> tensor<KxDxbf16> {
  %g = "graph.gather"(%t, %i) <{axis = 0 : i64}> : (tensor<NxDxbf16>, tensor<Kxi64>) -> tensor<KxDxbf16>
  %r = "graph.add"(%g, %p) : (tensor<KxDxbf16>, tensor<KxDxbf16>) -> tensor<KxDxbf16>
  return %r : tensor<KxDxbf16>
}`},
		{"columns", 1, `func.func @main(%t: tensor<DxNxf32>, %i: tensor<Kxi64>) -> tensor<DxKxf32> {
  %r = "graph.gather"(%t, %i) <{axis = 1 : i64}> : (tensor<DxNxf32>, tensor<Kxi64>) -> tensor<DxKxf32>
  return %r : tensor<DxKxf32>
}`},
		{"dynamic-table", 0, `func.func @main(%t: tensor<?xDxf32>, %i: tensor<Kxi64>) -> tensor<KxDxf32> {
  %r = "graph.gather"(%t, %i) <{axis = 0 : i64}> : (tensor<?xDxf32>, tensor<Kxi64>) -> tensor<KxDxf32>
  return %r : tensor<KxDxf32>
}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				n := rapid.IntRange(1, 9).Draw(rt, "n")
				d := rapid.IntRange(1, 12).Draw(rt, "d")
				k := rapid.IntRange(1, 20).Draw(rt, "k")
				c := configs[rapid.IntRange(0, len(configs)-1).Draw(rt, "config")]
				idx := make([]int64, k)
				for j := range idx {
					idx[j] = int64(rapid.IntRange(-2*n-1, 2*n).Draw(rt, "index"))
				}
				dyn := strings.Contains(tc.src, "?x")
				rows := n
				if dyn {
					rows = rapid.IntRange(0, 9).Draw(rt, "rows") // an empty table too
				}
				src := strings.NewReplacer("N", fmt.Sprint(n), "D", fmt.Sprint(d), "K", fmt.Sprint(k)).Replace(tc.src)
				ctx := dialects.NewContext()
				m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "gather.mlir"})
				if err != nil {
					rt.Fatal(err)
				}
				ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "gather.mlir"})
				if err != nil {
					rt.Fatal(err)
				}
				pm, err := passes.Parse("builtin.module(lower-to-loop)")
				if err != nil {
					rt.Fatal(err)
				}
				if err := pm.Run(ctx, m); err != nil {
					rt.Fatal(err)
				}
				if err := togpu.Run(ctx, m, c.cfg); err != nil {
					rt.Fatalf("%s: %v", c.name, err)
				}
				// The table (and the added tensor) of small integers, exact
				// in bf16, as are their sums.
				shape := []int64{int64(rows), int64(d)}
				if tc.axis == 1 {
					shape = []int64{int64(d), int64(n)}
				}
				elem := ir.Type(ir.F32)
				if strings.Contains(src, "bf16") {
					elem = ir.BF16
				}
				vals := func(shape []int64, base float64) *interp.Tensor {
					vs := make([]float64, shape[0]*shape[1])
					for i := range vs {
						vs[i] = base + float64(i%60)
					}
					x, err := interp.FromFloat64s(elem, shape, vs)
					if err != nil {
						rt.Fatal(err)
					}
					return x
				}
				table := vals(shape, 1)
				ids, err := interp.FromInt64s(ir.I64, []int64{int64(k)}, idx)
				if err != nil {
					rt.Fatal(err)
				}
				args := []interp.Value{table, ids}
				outShape := []int64{int64(k), int64(d)}
				if tc.axis == 1 {
					outShape = []int64{int64(d), int64(k)}
				}
				var plus *interp.Tensor
				if strings.Contains(src, "graph.add") {
					plus = vals(outShape, 100)
					args = append(args, plus)
				}
				bufs := make([]interp.Value, len(args))
				for i, a := range args {
					bufs[i] = interp.BufferFromTensor(a.(*interp.Tensor))
				}
				got, err := interp.New(m).Call("main", bufs...)
				if err != nil {
					rt.Fatalf("%s: the kernels: %v", c.name, err)
				}
				gt, err := got[0].(*interp.Buffer).Tensor()
				if err != nil {
					rt.Fatal(err)
				}
				size := int64(rows)
				if tc.axis == 1 {
					size = int64(n)
				}
				tv, out := table.Float64s(), gt.Float64s()
				var pv []float64
				if plus != nil {
					pv = plus.Float64s()
				}
				bad := false
				for j, i := range idx {
					if i < -size || i >= size {
						bad = true
					} else if i < 0 {
						i += size
					}
					for e := range int64(d) {
						at, from := int64(j)*int64(d)+e, i*int64(d)+e
						if tc.axis == 1 {
							at, from = e*int64(k)+int64(j), e*size+i
						}
						want := 0.0
						if i >= 0 && i < size {
							want = tv[from]
						}
						if pv != nil {
							want += pv[at]
						}
						if out[at] != want {
							rt.Fatalf("%s: index %d (position %d), element %d: %g, want %g", c.name, idx[j], j, e, out[at], want)
						}
					}
				}
				_, err = interp.New(ref).Call("main", args...)
				if bad != (err != nil) || bad && !strings.Contains(err.Error(), "out of range") {
					rt.Fatalf("the graph on indices %v (table of %d): error %v", idx, size, err)
				}
			})
		})
	}
}
