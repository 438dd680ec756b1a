package togpu_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// scatterProgram draws a graph.scatter_add of f32 or f64 updates at
// constant indices (repeats, negatives, positions no index names; one or
// two dims of them), the updates an argument or exp of one, the result
// returned or added to another argument: the scatter kernel with the
// producer and consumer groups around it.
func scatterProgram(t *rapid.T) *passtest.Program {
	elem := rapid.SampledFrom([]string{"f32", "f64"}).Draw(t, "elem")
	dims := func(label string, lo, hi int) []int64 {
		return rapid.SliceOfN(rapid.Int64Range(1, 4), lo, hi).Draw(t, label)
	}
	outer, inner, is := dims("outer", 0, 2), dims("inner", 0, 2), dims("indices", 0, 2)
	size := rapid.Int64Range(1, 5).Draw(t, "size")
	idx := rapid.SliceOfN(rapid.Int64Range(-size, size-1), 1, 1).Draw(t, "first")
	n := int(ir.NumElements(is))
	idx = append(idx, rapid.SliceOfN(rapid.Int64Range(-size, size-1), n-1, n-1).Draw(t, "rest")...)
	axis := int64(len(outer))
	if rapid.Bool().Draw(t, "negative-axis") {
		axis -= int64(len(outer) + 1 + len(inner))
	}
	ty := func(shape []int64, e string) string {
		var b strings.Builder
		b.WriteString("tensor<")
		for _, d := range shape {
			fmt.Fprintf(&b, "%dx", d)
		}
		return b.String() + e + ">"
	}
	ut := ty(slices.Concat(outer, is, inner), elem)
	rt := ty(slices.Concat(outer, []int64{size}, inner), elem)
	it := ty(is, "i64")
	vals := make([]string, len(idx))
	for i, v := range idx {
		vals[i] = fmt.Sprint(v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "func.func @f(%%u: %s, %%c: %s) -> %s {\n", ut, rt, rt)
	fmt.Fprintf(&b, "  %%i = \"graph.constant\"() <{value = dense<[%s]> : tensor<%dxi64>}> : () -> tensor<%dxi64>\n", strings.Join(vals, ", "), n, n)
	fmt.Fprintf(&b, "  %%ir = \"graph.reshape\"(%%i) <{shape = [%s]}> : (tensor<%dxi64>) -> %s\n", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(is)), ", "), "[]"), n, it)
	u := "%u"
	if rapid.Bool().Draw(t, "exp") {
		fmt.Fprintf(&b, "  %%e = \"graph.exp\"(%%u) : (%s) -> %s\n", ut, ut)
		u = "%e"
	}
	fmt.Fprintf(&b, "  %%s = \"graph.scatter_add\"(%s, %%ir) <{axis = %d : i64, size = %d : i64}> : (%s, %s) -> %s\n", u, axis, size, ut, it, rt)
	r := "%s"
	if rapid.Bool().Draw(t, "add") {
		fmt.Fprintf(&b, "  %%r = \"graph.add\"(%%s, %%c) : (%s, %s) -> %s\n", rt, rt, rt)
		r = "%r"
	}
	fmt.Fprintf(&b, "  return %s : %s\n}\n", r, rt)
	return &passtest.Program{Source: b.String(), Func: "f"}
}

// TestScatterAddPreservesSemantics runs scatter programs through
// lower-to-gpu (the f32 sums as atomic adds, after a zero kernel; f64
// a thread per column) and through the conversion on a small grid
// (block 64, at most 3 blocks: threads loop over several points) against
// the interpreter.
func TestScatterAddPreservesSemantics(t *testing.T) {
	gen := rapid.Custom(scatterProgram)
	passtest.PreservesSemantics(t, "builtin.module(lower-to-gpu)", gen)
	passtest.PreservesSemantics(t, "builtin.module(lower-to-loop,convert-loop-to-gpu{block=64 max-blocks=3})", gen)
}

// TestScatterAddMapping checks what the nests become: f32 a pointwise
// zero kernel and the scatter kernel of atomic adds, f64 one pointwise
// kernel (a thread per column, no atomics).
func TestScatterAddMapping(t *testing.T) {
	for _, tc := range []struct {
		elem    string
		want    map[string]int
		atomics int
	}{
		{"f32", map[string]int{togpu.MappingPointwise: 1, togpu.MappingScatter: 1}, 1},
		{"f64", map[string]int{togpu.MappingPointwise: 1}, 0},
	} {
		t.Run(tc.elem, func(t *testing.T) {
			src := strings.ReplaceAll(`func.func @main(%u: tensor<64x8xT>, %i: tensor<64xi64>) -> tensor<10x8xT> {
  %s = "graph.scatter_add"(%u, %i) <{axis = 0 : i64, size = 10 : i64}> : (tensor<64x8xT>, tensor<64xi64>) -> tensor<10x8xT>
  return %s : tensor<10x8xT>
}`, "T", tc.elem)
			m := passtest.Run(t, src, "builtin.module(lower-to-gpu)")
			if got := togpu.LaunchMappings(m); !maps.Equal(got, tc.want) {
				t.Errorf("launches by mapping %v, want %v\n%s", got, tc.want, m)
			}
			if got := strings.Count(ir.Sprint(m, ir.PrintOptions{}), `"gpu.atomic_add"`); got != tc.atomics {
				t.Errorf("%d gpu.atomic_add, want %d", got, tc.atomics)
			}
		})
	}
}
