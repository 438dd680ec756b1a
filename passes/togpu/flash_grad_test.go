package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// flashGradCases are small attentions for the backward kernels: row and
// key tails, several blocks and tiles both ways, more keys than queries
// and fewer (causal blocks with no query tile), head dims 16 to 128 (the
// dK/dV kernel's 32-query tiles), a negative scale, f16.
var flashGradCases = []flashCase{
	{1, 2, 40, 40, 32, false, 0, ir.BF16},
	{1, 2, 40, 40, 32, true, 0, ir.BF16},
	{2, 1, 70, 70, 16, true, 0, ir.BF16},
	{1, 1, 24, 90, 16, true, 0, ir.BF16},
	{1, 1, 130, 70, 64, true, 0, ir.BF16},
	{1, 1, 100, 90, 64, false, 0, ir.BF16},
	{1, 1, 64, 128, 64, true, 0, ir.BF16},
	{1, 1, 40, 70, 32, false, -0.3, ir.BF16},
	{1, 1, 70, 40, 128, true, 0.5, ir.BF16},
	{1, 1, 67, 100, 128, false, 0, ir.BF16},
	{1, 2, 40, 40, 48, true, 0, ir.F16},
}

// gradSource is @main(q, k, v, o, do) returning c's graph.attention_grad.
func (c flashCase) gradSource() string {
	q, k := c.types()
	attrs := fmt.Sprintf("causal = %v", c.causal)
	if c.scale != 0 {
		attrs += fmt.Sprintf(", scale = %g : f64", c.scale)
	}
	return fmt.Sprintf(`func.func @main(%%q: %[1]s, %%k: %[2]s, %%v: %[2]s, %%o: %[1]s, %%do: %[1]s) -> (%[1]s, %[2]s, %[2]s) {
  %%r:3 = "graph.attention_grad"(%%q, %%k, %%v, %%o, %%do) <{%[3]s}> : (%[1]s, %[2]s, %[2]s, %[1]s, %[1]s) -> (%[1]s, %[2]s, %[2]s)
  return %%r#0, %%r#1, %%r#2 : %[1]s, %[2]s, %[2]s
}`, q, k, attrs)
}

// flashGradModule returns a module whose @main(q, k, v, do, o, lse, dq,
// dk, dv, dd) launches the forward kernel of f with LSE (writing o and
// lse), then the backward kernels.
func flashGradModule(t *testing.T, ctx *ir.Context, f togpu.Flash) *ir.Operation {
	t.Helper()
	f.LSE = true
	fg := togpu.FlashGrad{Flash: f}
	ft, dq := f.ArgTypes(), fg.DQArgTypes()
	dkv := fg.DKVArgTypes()
	src := fmt.Sprintf("module attributes {gpu.container_module} {\n  func.func @main(%%q: %s, %%k: %s, %%v: %s, %%do: %s, %%o: %s, %%lse: %s, %%dq: %s, %%dk: %s, %%dv: %s, %%dd: %s) {\n    return\n  }\n}\n",
		ft[0], ft[1], ft[2], ft[0], ft[3], ft[4], dq[6], dkv[6], dkv[7], dq[7])
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "flash.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := ir.NewSymTable(m).Lookup("main")
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointAfter(fn)
	gmod := gpu.NewModule(b, fn.Loc(), "main_kernels")
	b.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	fwd, err := f.Kernel(b, fn.Loc(), "flash")
	if err != nil {
		t.Fatal(err)
	}
	kdq, kdkv, err := fg.Kernels(b, fn.Loc(), "flash_bwd")
	if err != nil {
		t.Fatal(err)
	}
	body := fn.Region(0).Front()
	b.SetInsertionPointBefore(body.Last())
	a := body.Arguments()
	q, k, v, do, o, lse, dqB, dkB, dvB, dd := a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]
	if _, err := f.Launch(b, fn.Loc(), fwd, gpu.KernelRef("main_kernels", "flash"), q, k, v, o, lse); err != nil {
		t.Fatal(err)
	}
	ref := func(name string) ir.SymbolRefAttr { return gpu.KernelRef("main_kernels", name) }
	if err := fg.Launch(b, fn.Loc(), kdq, kdkv, ref, []*ir.Value{q, k, v, o, do, lse, dqB, dd}, []*ir.Value{q, k, v, do, lse, dd, dkB, dvB}); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
	}
	return m
}

// gradClose fails t unless got is within tol of want normwise (‖got −
// want‖ ≤ tol·‖want‖) and every element within 4·tol·max|want|; it
// returns the normwise error.
func gradClose(t *testing.T, name string, got, want []float64, tol float64) float64 {
	t.Helper()
	var num, den, top float64
	for i := range want {
		d := got[i] - want[i]
		if math.IsNaN(got[i]) {
			t.Fatalf("%s: element %d is NaN", name, i)
		}
		num += d * d
		den += want[i] * want[i]
		top = max(top, math.Abs(want[i]))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 4*tol*top {
			t.Fatalf("%s: element %d: kernel %g, graph %g (max |graph| %g)", name, i, got[i], want[i], top)
		}
	}
	rel := math.Sqrt(num / max(den, 1e-300))
	if top == 0 {
		t.Fatalf("%s: the graph's gradient is all zeros (a test that cannot fail)", name)
	}
	if rel > tol {
		t.Fatalf("%s: normwise error %.3g > %.3g", name, rel, tol)
	}
	return rel
}

// TestFlashGradSemantics runs the forward kernel (with its log-sum-exp)
// and the backward kernels in the interpreter's GPU simulation and
// compares dq, dk and dv with the interpreter's graph.attention_grad on
// the kernel's o. Tolerance: both sides round P and dS to the element
// type once, but at different points (the kernel's P comes from the
// saved log-sum-exp, the graph's from a normalised softmax), and sum in
// other orders: a few bf16 ulps of each term, 2⁻⁶ normwise; a wrong mask,
// tile or statistic moves gradients by far more.
func TestFlashGradSemantics(t *testing.T) {
	const tol = 1.0 / 64
	for _, tc := range flashGradCases {
		t.Run(tc.String(), func(t *testing.T) {
			t.Parallel()
			q, k, v := tc.inputs(t)
			rng := rand.New(rand.NewPCG(uint64(tc.d), 7))
			do := randomFloats(t, rng, tc.elem, q.Shape())
			ctx := dialects.NewContext()
			m := flashGradModule(t, ctx, tc.flash(togpu.FlashTile{}))
			buf := func(elem ir.Type, n int) *interp.Buffer {
				b, err := interp.NewBuffer(elem, []int64{int64(n)})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			rows := int(tc.b * tc.h * tc.lq)
			o, lse, dd := buf(tc.elem, q.Len()), buf(ir.F32, rows), buf(ir.F32, rows)
			dq, dk, dv := buf(tc.elem, q.Len()), buf(tc.elem, k.Len()), buf(tc.elem, v.Len())
			if _, err := interp.New(m).Call("main", flat(t, q), flat(t, k), flat(t, v), flat(t, do), o, lse, dq, dk, dv, dd); err != nil {
				t.Fatal(err)
			}
			ot, err := o.Tensor()
			if err != nil {
				t.Fatal(err)
			}
			oq, err := interp.FromBits(tc.elem, q.Shape(), ot.Bits())
			if err != nil {
				t.Fatal(err)
			}
			rm, err := ir.Parse(ctx, tc.gradSource(), ir.ParseOptions{Filename: "ref.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			want, err := interp.New(rm).Call("main", q, k, v, oq, do)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range []*interp.Buffer{dq, dk, dv} {
				gt, err := g.Tensor()
				if err != nil {
					t.Fatal(err)
				}
				rel := gradClose(t, []string{"dq", "dk", "dv"}[i], gt.Float64s(), want[i].(*interp.Tensor).Float64s(), tol)
				t.Logf("%s: normwise error %.3g", []string{"dq", "dk", "dv"}[i], rel)
				if i == 0 {
					t.Logf("dq[0:4] kernel %v graph %v", gt.Float64s()[:4], want[0].(*interp.Tensor).Float64s()[:4])
				}
			}
		})
	}
}
