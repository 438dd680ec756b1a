package lower_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestSigmoidBitIdentical checks that lowered graph.sigmoid gives graph's own
// bits, in every float type, on the values where its formula is delicate
// (±0, ±inf, NaN, exp's overflow and underflow edges, subnormals) and on
// random bit patterns.
func TestSigmoidBitIdentical(t *testing.T) {
	special := []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, -2, 20, -20, 88, -88, 89, -89,
		100, -100, 104, -104, 110, -110, 700, -700, 710, -710, 746, -746, 1e30, -1e30,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(),
	}
	for _, elem := range []*ir.FloatType{ir.F64, ir.F32, ir.F16, ir.BF16} {
		t.Run(elem.String(), func(t *testing.T) {
			in, err := interp.FromFloat64s(elem, []int64{int64(len(special))}, special)
			if err != nil {
				t.Fatal(err)
			}
			checkSigmoidBits(t, in)
			rng := rand.New(rand.NewPCG(1, 2))
			bits := make([]uint64, 4096)
			for i := range bits {
				bits[i] = rng.Uint64() >> (64 - elem.Width)
			}
			in, err = interp.FromBits(elem, []int64{int64(len(bits))}, bits)
			if err != nil {
				t.Fatal(err)
			}
			checkSigmoidBits(t, in)
		})
	}
}

// checkSigmoidBits runs graph.sigmoid on in before and after lower-to-loop
// and compares the results bit for bit (any NaN matching any NaN).
func checkSigmoidBits(t *testing.T, in *interp.Tensor) {
	t.Helper()
	typ := fmt.Sprintf("tensor<%dx%s>", in.Len(), in.ElemType())
	src := fmt.Sprintf(`func.func @main(%%x: %[1]s) -> %[1]s {
  %%0 = "graph.sigmoid"(%%x) : (%[1]s) -> %[1]s
  return %%0 : %[1]s
}`, typ)
	want := callMain(t, passtest.Run(t, src, ""), in)
	gotBuf, ok := callMain(t, passtest.Run(t, src, "lower-to-loop"), interp.BufferFromTensor(in)).(*interp.Buffer)
	if !ok {
		t.Fatal("the lowered function does not return a buffer")
	}
	got, err := gotBuf.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	xs, gs, ws := in.Float64s(), got.Float64s(), want.(*interp.Tensor).Float64s()
	gb, wb := got.Bits(), want.(*interp.Tensor).Bits()
	for i := range xs {
		if gb[i] != wb[i] && !(math.IsNaN(gs[i]) && math.IsNaN(ws[i])) {
			t.Errorf("sigmoid(%g) in %s: lowered %g (%#x), graph %g (%#x)", xs[i], in.ElemType(), gs[i], gb[i], ws[i], wb[i])
		}
	}
}

func callMain(t *testing.T, m *ir.Operation, arg interp.Value) interp.Value {
	t.Helper()
	res, err := interp.New(m).Call("main", arg)
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}
