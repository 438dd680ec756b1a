package interp

import (
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// warpOp parses a function holding one warp-collective op and returns it
// (its operands are the function's arguments; the lanes' values are
// passed to the lane rules directly).
func warpOp(t *testing.T, src, name string) *ir.Operation {
	t.Helper()
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, gpu.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "mma.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	var op *ir.Operation
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() == name {
			op = o
		}
		return true
	})
	if op == nil {
		t.Fatalf("no %s in\n%s", name, src)
	}
	return op
}

// bf16Buffer holds 16×16 row-major bf16 values v(r, c) = r·16 + c (exact
// in bf16 up to 256).
func bf16Buffer(t *testing.T) *Buffer {
	vs := make([]float64, 256)
	for i := range vs {
		vs[i] = float64(i)
	}
	x, err := FromFloat64s(ir.BF16, []int64{256}, vs)
	if err != nil {
		t.Fatal(err)
	}
	return BufferFromTensor(x)
}

func halves(v Value) (lo, hi float64) {
	w := uint32(v.(*Tensor).data.([]int32)[0])
	return ir.FloatFromBits(uint64(w&0xffff), ir.BF16), ir.FloatFromBits(uint64(w>>16), ir.BF16)
}

// TestLdMatrixLanes loads the four 8×8 quadrants of a 16×16 matrix, as
// the mma kernels address A (lane l gives row l & 15 at column 8·(l >> 4)),
// plain and transposed, and checks each lane's pairs.
func TestLdMatrixLanes(t *testing.T) {
	buf := bf16Buffer(t)
	for _, trans := range []bool{false, true} {
		attrs := "num = 4 : i64"
		if trans {
			attrs += ", trans"
		}
		op := warpOp(t, `func.func @f(%s: memref<256xbf16, 3>, %i: index) {
  %r:4 = "gpu.ldmatrix"(%s, %i) <{`+attrs+`}> : (memref<256xbf16, 3>, index) -> (i32, i32, i32, i32)
  return
}`, gpu.LdMatrixOp)
		args := make([][]Value, gpu.WarpSize)
		for l := range args {
			args[l] = []Value{buf, index(int64((l&15)*16 + 8*(l>>4)))}
		}
		out, err := ldMatrixLanes(op, args)
		if err != nil {
			t.Fatal(err)
		}
		for l := range out {
			g, c := l/4, 2*(l%4)
			for i := range 4 {
				// Matrix i: rows 8·(i%2), columns 8·(i/2).
				r0, c0 := 8*(i%2), 8*(i/2)
				want := func(dc int) float64 {
					if trans {
						return float64((r0+c+dc)*16 + c0 + g)
					}
					return float64((r0+g)*16 + c0 + c + dc)
				}
				lo, hi := halves(out[l][i])
				if lo != want(0) || hi != want(1) {
					t.Errorf("trans=%v lane %d matrix %d: (%g, %g), want (%g, %g)", trans, l, i, lo, hi, want(0), want(1))
				}
			}
		}
	}
}

// TestMMALanes multiplies A = I + E (E all ones in row 3) by B(k, n) =
// k + n over 16 × 8 with C(m, n) = m, from fragments laid out as
// gpu.mma_sync documents, and checks D = A·B + C.
func TestMMALanes(t *testing.T) {
	op := warpOp(t, `func.func @f(%a: i32, %b: i32, %c: f32) {
  %d:4 = "gpu.mma_sync"(%a, %a, %a, %a, %b, %b, %c, %c, %c, %c) <{ab_type = bf16}> : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> (f32, f32, f32, f32)
  return
}`, gpu.MMASyncOp)
	a := func(m, k int) float64 {
		v := 0.0
		if m == k {
			v = 1
		}
		if m == 3 {
			v++
		}
		return v
	}
	bv := func(k, n int) float64 { return float64(k + n) }
	pack := func(lo, hi float64) Value {
		return i32Scalar(uint32(ir.FloatToBits(lo, ir.BF16)) | uint32(ir.FloatToBits(hi, ir.BF16))<<16)
	}
	args := make([][]Value, gpu.WarpSize)
	for l := range args {
		g, t2 := l/4, 2*(l%4)
		for r := range 4 {
			row, col := g+8*(r%2), t2+8*(r/2)
			args[l] = append(args[l], pack(a(row, col), a(row, col+1)))
		}
		for r := range 2 {
			args[l] = append(args[l], pack(bv(t2+8*r, g), bv(t2+8*r+1, g)))
		}
		for r := range 4 {
			args[l] = append(args[l], &Tensor{elem: ir.F32, data: []float32{float32(g + 8*(r/2))}})
		}
	}
	out, err := mmaLanes(op, args)
	if err != nil {
		t.Fatal(err)
	}
	for l := range out {
		g, t2 := l/4, 2*(l%4)
		for r := range 4 {
			m, n := g+8*(r/2), t2+r%2
			want := float64(m)
			for k := range 16 {
				want += a(m, k) * bv(k, n)
			}
			if got := float64(out[l][r].(*Tensor).data.([]float32)[0]); got != want {
				t.Errorf("lane %d d%d (row %d, col %d) = %g, want %g", l, r, m, n, got, want)
			}
		}
	}
}
