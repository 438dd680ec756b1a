package interp

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/ir"
)

// refOp is an op of the random programs and its meaning in plain Go, on
// float64 for f64, float32 for f32, and wrapped int64 for integers.
type refOp struct {
	name  string
	unary bool
	f64   func(a, b float64) float64
	f32   func(a, b float32) float32
	i64   func(a, b int64) (int64, bool) // result before wrapping; false if undefined (int64 overflow included)
}

var floatRefOps = []refOp{
	{name: "arith.addf", f64: func(a, b float64) float64 { return a + b }, f32: func(a, b float32) float32 { return a + b }},
	{name: "arith.subf", f64: func(a, b float64) float64 { return a - b }, f32: func(a, b float32) float32 { return a - b }},
	{name: "arith.mulf", f64: func(a, b float64) float64 { return a * b }, f32: func(a, b float32) float32 { return a * b }},
	{name: "arith.divf", f64: func(a, b float64) float64 { return a / b }, f32: func(a, b float32) float32 { return a / b }},
	{name: "arith.maximumf", f64: math.Max, f32: func(a, b float32) float32 { return float32(math.Max(float64(a), float64(b))) }},
	{name: "arith.minimumf", f64: math.Min, f32: func(a, b float32) float32 { return float32(math.Min(float64(a), float64(b))) }},
	{name: "arith.negf", unary: true, f64: func(a, _ float64) float64 { return -a }, f32: func(a, _ float32) float32 { return -a }},
}

var intRefOps = []refOp{
	{name: "arith.addi", i64: func(a, b int64) (int64, bool) { return a + b, true }},
	{name: "arith.subi", i64: func(a, b int64) (int64, bool) { return a - b, true }},
	{name: "arith.muli", i64: func(a, b int64) (int64, bool) { return a * b, true }},
	{name: "arith.andi", i64: func(a, b int64) (int64, bool) { return a & b, true }},
	{name: "arith.xori", i64: func(a, b int64) (int64, bool) { return a ^ b, true }},
	{name: "arith.maxsi", i64: func(a, b int64) (int64, bool) { return max(a, b), true }},
	{name: "arith.divsi", i64: func(a, b int64) (int64, bool) {
		if b == 0 || b == -1 && a == math.MinInt64 {
			return 0, false
		}
		return a / b, true
	}},
}

// TestRandomArithPrograms runs random straight-line arith programs on random
// inputs and compares every result with the same computation done in Go.
func TestRandomArithPrograms(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		elem := rapid.SampledFrom([]string{"f32", "f64", "i32", "i64"}).Draw(rt, "elem")
		n := rapid.SampledFrom([]int{0, 1, 3}).Draw(rt, "n") // 0: a scalar
		typ, shape := elem, []int64(nil)
		if n > 0 {
			typ, shape = fmt.Sprintf("tensor<%dx%s>", n, elem), []int64{int64(n)}
		}
		size := max(n, 1)
		isFloat := elem[0] == 'f'
		ops := intRefOps
		if isFloat {
			ops = floatRefOps
		}

		// Values are kept as float64 or int64 slices in the reference.
		nargs := rapid.IntRange(1, 3).Draw(rt, "nargs")
		var fvals [][]float64
		var ivals [][]int64
		var args []Value
		var argTypes []string
		for i := range nargs {
			argTypes = append(argTypes, typ)
			if isFloat {
				vs := rapid.SliceOfN(rapid.Float64Range(-4, 4), size, size).Draw(rt, fmt.Sprint("arg", i))
				v := must(FromFloat64s(ir.F64, shape, vs))
				if elem == "f32" {
					v = must(FromFloat64s(ir.F32, shape, vs))
				}
				fvals = append(fvals, v.Float64s())
				args = append(args, v)
			} else {
				vs := rapid.SliceOfN(rapid.Int64Range(-1<<40, 1<<40), size, size).Draw(rt, fmt.Sprint("arg", i))
				it := ir.I64
				if elem == "i32" {
					it = ir.I32
				}
				v := must(FromInt64s(it, shape, vs))
				ivals = append(ivals, v.Int64s())
				args = append(args, v)
			}
		}
		var body strings.Builder
		undefined := false
		nops := rapid.IntRange(1, 12).Draw(rt, "nops")
		for k := range nops {
			op := rapid.SampledFrom(ops).Draw(rt, "op")
			nvals := nargs + k
			x := rapid.IntRange(0, nvals-1).Draw(rt, "x")
			y := rapid.IntRange(0, nvals-1).Draw(rt, "y")
			name := func(i int) string {
				if i < nargs {
					return fmt.Sprintf("%%a%d", i)
				}
				return fmt.Sprintf("%%v%d", i-nargs)
			}
			if op.unary {
				fmt.Fprintf(&body, "  %%v%d = %q(%s) : (%s) -> %s\n", k, op.name, name(x), typ, typ)
			} else {
				fmt.Fprintf(&body, "  %%v%d = %q(%s, %s) : (%s, %s) -> %s\n", k, op.name, name(x), name(y), typ, typ, typ)
			}
			if isFloat {
				r := make([]float64, size)
				for i := range r {
					a, b := fvals[x][i], fvals[y][i]
					if elem == "f32" {
						r[i] = float64(op.f32(float32(a), float32(b)))
					} else {
						r[i] = op.f64(a, b)
					}
				}
				fvals = append(fvals, r)
			} else {
				r := make([]int64, size)
				for i := range r {
					v, ok := op.i64(ivals[x][i], ivals[y][i])
					if elem == "i32" {
						// MIN / -1 overflows i32 just as it does int64.
						ok = ok && !(op.name == "arith.divsi" && ivals[x][i] == math.MinInt32 && ivals[y][i] == -1)
						v = int64(int32(v))
					}
					undefined = undefined || !ok
					r[i] = v
				}
				ivals = append(ivals, r)
			}
		}
		fmt.Fprintf(&body, "  \"func.return\"(%%v%d) : (%s) -> ()", nops-1, typ)
		src := fn("f", argTypes, []string{typ}, body.String())
		m := parse(rt, src)
		out, err := New(m).Call("f", args...)
		if undefined {
			if err == nil || !strings.Contains(err.Error(), "division") {
				rt.Fatalf("expected a division error, got %v\n%s", err, src)
			}
			return
		}
		if err != nil {
			rt.Fatalf("%v\n%s", err, src)
		}
		got := out[0].(*Tensor)
		if isFloat {
			want := fvals[len(fvals)-1]
			for i, g := range got.Float64s() {
				if !sameFloat(g, want[i]) {
					rt.Fatalf("element %d = %v, Go computes %v\n%s", i, g, want[i], src)
				}
			}
		} else {
			want := ivals[len(ivals)-1]
			for i, g := range got.Int64s() {
				if g != want[i] {
					rt.Fatalf("element %d = %v, Go computes %v\n%s", i, g, want[i], src)
				}
			}
		}
	})
}

// BenchmarkAddF32 measures one elementwise addf over 1M f32 elements.
func BenchmarkAddF32(b *testing.B) {
	const n = 1 << 20
	ty := fmt.Sprintf("tensor<%dxf32>", n)
	m := parse(b, opFunc("arith.addf", []string{ty, ty}, ty, ""))
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = float64(i) * 0.5
	}
	x := must(FromFloat64s(ir.F32, []int64{n}, vs))
	in := New(m)
	b.SetBytes(3 * 4 * n)
	for b.Loop() {
		if _, err := in.Call("f", x, x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExpF32 measures one math.exp over 1M f32 elements.
func BenchmarkExpF32(b *testing.B) {
	const n = 1 << 20
	ty := fmt.Sprintf("tensor<%dxf32>", n)
	m := parse(b, opFunc("math.exp", []string{ty}, ty, ""))
	x := must(NewTensor(ir.F32, []int64{n}))
	in := New(m)
	for b.Loop() {
		if _, err := in.Call("f", x); err != nil {
			b.Fatal(err)
		}
	}
}
