package fusion_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/fusion"
	"github.com/strata-ir/strata/passes/passtest"
	_ "github.com/strata-ir/strata/passes/togpu" // lower-to-gpu
)

// normProgram is batch norm's shape of computation over the rows of x
// [A, B] (or of a product x·w): a centred value d = f(x) − k, two
// reductions over axis 0 (not the innermost: one kernel walks the rows
// for both, a thread a column), and a
// pointwise result that reads d again, so that d crosses kernels unless
// its readers recompute it. The draws vary the element type, the
// producer, the ops, the reductions and what the function returns;
// narrow reports whether every reader should recompute d.
func normProgram(t *rapid.T) (p *passtest.Program, narrow bool) {
	a := rapid.IntRange(1, 6).Draw(t, "a")
	b := rapid.IntRange(1, 6).Draw(t, "b")
	elem := rapid.SampledFrom([]string{"bf16", "f32"}).Draw(t, "elem")
	matmul := rapid.Bool().Draw(t, "matmul")
	unary := rapid.SampledFrom([]string{"graph.exp", "graph.neg", "graph.abs", "graph.tanh"}).Draw(t, "unary")
	red1 := rapid.SampledFrom([]string{"graph.reduce_sum", "graph.reduce_max", "graph.reduce_mean"}).Draw(t, "red1")
	red2 := rapid.SampledFrom([]string{"graph.reduce_sum", "graph.reduce_min", "graph.reduce_mean"}).Draw(t, "red2")
	returnD := rapid.Bool().Draw(t, "returnD")
	view := rapid.Bool().Draw(t, "view")

	ab := func(e string) string { return fmt.Sprintf("tensor<%dx%dx%s>", a, b, e) }
	row := fmt.Sprintf("tensor<1x%dxf32>", b)
	var body strings.Builder
	args := fmt.Sprintf("%%x: %s, %%k: tensor<%dxf32>", ab(elem), b)
	x := "%x"
	if matmul {
		args = fmt.Sprintf("%%x: tensor<%dx3x%s>, %%w: tensor<3x%dx%s>, %%k: tensor<%dxf32>", a, elem, b, elem, b)
		fmt.Fprintf(&body, "  %%p = \"graph.matmul\"(%%x, %%w) : (tensor<%dx3x%s>, tensor<3x%dx%s>) -> %s\n", a, elem, b, elem, ab(elem))
		x = "%p"
	}
	if elem == "f32" {
		fmt.Fprintf(&body, "  %%c = \"graph.neg\"(%s) : (%s) -> %s\n", x, ab("f32"), ab("f32"))
	} else {
		fmt.Fprintf(&body, "  %%c = \"graph.cast\"(%s) : (%s) -> %s\n", x, ab(elem), ab("f32"))
	}
	f := ab("f32")
	c := "%c"
	if view { // a view of a cone value, which a reader clones with the cone
		fmt.Fprintf(&body, "  %%cv = \"graph.reshape\"(%%c) <{shape = [%d]}> : (%s) -> tensor<%dxf32>\n", a*b, f, a*b)
		fmt.Fprintf(&body, "  %%cw = \"graph.reshape\"(%%cv) <{shape = [%d, %d]}> : (tensor<%dxf32>) -> %s\n", a, b, a*b, f)
		c = "%cw"
	}
	fmt.Fprintf(&body, "  %%d = \"graph.sub\"(%s, %%k) : (%s, tensor<%dxf32>) -> %s\n", c, f, b, f)
	fmt.Fprintf(&body, "  %%e = \"%s\"(%%d) : (%s) -> %s\n", unary, f, f)
	fmt.Fprintf(&body, "  %%s1 = \"%s\"(%%d) <{axes = [0], keepdims = true}> : (%s) -> %s\n", red1, f, row)
	fmt.Fprintf(&body, "  %%m = \"graph.mul\"(%%e, %%d) : (%s, %s) -> %s\n", f, f, f)
	fmt.Fprintf(&body, "  %%s2 = \"%s\"(%%m) <{axes = [0], keepdims = true}> : (%s) -> %s\n", red2, f, row)
	fmt.Fprintf(&body, "  %%y0 = \"graph.mul\"(%%d, %%s2) : (%s, %s) -> %s\n", f, row, f)
	fmt.Fprintf(&body, "  %%y1 = \"graph.add\"(%%y0, %%s1) : (%s, %s) -> %s\n", f, row, f)
	fmt.Fprintf(&body, "  %%y = \"graph.cast\"(%%y1) : (%s) -> %s\n", f, ab(elem))
	results, rets := ab(elem), "%y : "+ab(elem)
	if returnD {
		results += ", " + f
		rets = "%y, %d : " + ab(elem) + ", " + f
	}
	fmt.Fprintf(&body, "  return %s", rets)
	return &passtest.Program{Func: "f", Source: fn(args, results, body.String())}, !returnD && elem == "bf16" && a > 1
}

// TestRematerializationPreservesSemantics lowers normProgram's draws to
// loops and compares them with the interpreter, and checks that some of
// them recompute the centred value in its readers.
func TestRematerializationPreservesSemantics(t *testing.T) {
	const pipeline = "builtin.module(func.func(graph-decompose,graph-fuse),convert-graph-to-loop)"
	recomputed := 0
	rapid.Check(t, func(rt *rapid.T) {
		p, narrow := normProgram(rt)
		seed := rapid.Int64().Draw(rt, "seed")
		if err := passtest.CheckSemantics(p, pipeline, seed); err != nil {
			rt.Fatalf("%v", err)
		}
		ctx := dialects.NewContext()
		m, err := p.Parse(ctx)
		if err != nil {
			rt.Fatal(err)
		}
		var log strings.Builder
		m.Walk(func(op *ir.Operation) bool {
			if op.Name() == "func.func" {
				o := fusion.DefaultOptions()
				o.Log = &log
				if _, err := fusion.Fuse(ctx, op, o); err != nil {
					rt.Fatal(err)
				}
				return false
			}
			return true
		})
		if strings.Contains(log.String(), "recompute") {
			recomputed++
		}
		// When x is bf16, has several rows and the function does not
		// return d, no kernel stores a float32 value over x's space:
		// each reader computes d itself from x (two bytes an element,
		// and k's row).
		wide := 0
		m.Walk(func(op *ir.Operation) bool {
			if op.Name() == "graph.fusion" {
				for _, r := range op.Results() {
					if t, ok := r.Type().(*ir.TensorType); ok && t.ElementType() == ir.F32 && ir.NumElements(t.Shape()) > ir.NumElements(t.Shape()[1:]) {
						wide++
					}
				}
			}
			return true
		})
		if narrow && wide > 0 {
			rt.Fatalf("%d float32 results over x's space:\n%s\n%s", wide, ir.Sprint(m, ir.PrintOptions{}), log.String())
		}
	})
	if recomputed == 0 {
		t.Errorf("no draw recomputed a value in its readers")
	}
	t.Logf("%d draws recomputed a value in its readers", recomputed)
}

// TestBatchNormCentredInputRecomputed: batch norm in mixed precision,
// its statistics over N, H and W of [N, C, H, W] (one kernel: reductions
// over the same axes, not the innermost, walk the input together), then
// the normalized bf16 output. The centred float32 input x − k is read by
// both; each recomputes it from the bf16 input (2 bytes an element)
// instead of the first storing it (4 bytes written, 4 read by the other).
func TestBatchNormCentredInputRecomputed(t *testing.T) {
	x, c, k := "tensor<4x3x8x8xbf16>", "tensor<4x3x8x8xf32>", "tensor<1x3x1x1xf32>"
	src := fn("%x: "+x+", %k: "+k, x, `
  %0 = "graph.cast"(%x) : (`+x+`) -> `+c+`
  %1 = "graph.sub"(%0, %k) : (`+c+`, `+k+`) -> `+c+`
  %2 = "graph.reduce_mean"(%1) <{axes = [0, 2, 3], keepdims = true}> : (`+c+`) -> `+k+`
  %3 = "graph.mul"(%1, %1) : (`+c+`, `+c+`) -> `+c+`
  %4 = "graph.reduce_mean"(%3) <{axes = [0, 2, 3], keepdims = true}> : (`+c+`) -> `+k+`
  %5 = "graph.mul"(%2, %2) : (`+k+`, `+k+`) -> `+k+`
  %6 = "graph.sub"(%4, %5) : (`+k+`, `+k+`) -> `+k+`
  %7 = "graph.rsqrt"(%6) : (`+k+`) -> `+k+`
  %8 = "graph.mul"(%1, %7) : (`+c+`, `+k+`) -> `+c+`
  %9 = "graph.sub"(%8, %2) : (`+c+`, `+k+`) -> `+c+`
  %10 = "graph.relu"(%9) : (`+c+`) -> `+c+`
  %11 = "graph.cast"(%10) : (`+c+`) -> `+x+`
  return %11 : `+x)
	m, log := fuse(t, src, fusion.DefaultOptions())
	if got, want := kinds(m), []string{"reduction", "pointwise"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("kinds %v, want %v\n%s", got, want, log)
	}
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == "graph.fusion" {
			for _, r := range op.Results() {
				if r.Type().String() == c {
					t.Errorf("a fusion stores the float32 centred input:\n%s", ir.Sprint(op, ir.PrintOptions{}))
				}
			}
		}
		return true
	})
	if !strings.Contains(log, "recompute 'graph.sub'") {
		t.Errorf("log does not say the centred input is recomputed:\n%s", log)
	}
	for _, pipeline := range []string{
		"builtin.module(func.func(graph-decompose,graph-fuse),convert-graph-to-loop)",
		"builtin.module(lower-to-gpu)",
	} {
		if err := passtest.CheckSemantics(&passtest.Program{Func: "f", Source: src}, pipeline, 1); err != nil {
			t.Errorf("%s: %v", pipeline, err)
		}
	}
}

// TestSmallBroadcastValues: batch norm in inference, its per-channel
// scale γ·rsqrt(var + ε) and shift β − mean·scale computed from the
// running statistics (a few ops over [C]) and read, broadcast, by the
// kernel that normalizes x [N, H, W, C]. Recomputed there, the rsqrt and
// its loads would run at every element of x: the values are stored by a
// kernel over [C] instead, one for every batch norm of that channel
// count. A cheap small value (a bias's cast) is
// still recomputed by its broadcast reader: no kernel of its own.
func TestSmallBroadcastValues(t *testing.T) {
	x, v, b := "tensor<2x4x4x8xbf16>", "tensor<8xbf16>", "tensor<1x1x1x8xbf16>"
	norm := func(i int) string {
		return strings.NewReplacer("X", fmt.Sprint(i), "%x", fmt.Sprintf("%%x%d", i)).Replace(`
  %aX = "graph.add"(%varX, %epsX) : (` + v + `, tensor<bf16>) -> ` + v + `
  %rX = "graph.rsqrt"(%aX) : (` + v + `) -> ` + v + `
  %scaleX = "graph.mul"(%rX, %gammaX) : (` + v + `, ` + v + `) -> ` + v + `
  %mX = "graph.mul"(%meanX, %scaleX) : (` + v + `, ` + v + `) -> ` + v + `
  %shiftX = "graph.sub"(%betaX, %mX) : (` + v + `, ` + v + `) -> ` + v + `
  %sbX = "graph.reshape"(%scaleX) <{shape = [1, 1, 1, 8]}> : (` + v + `) -> ` + b + `
  %tbX = "graph.reshape"(%shiftX) <{shape = [1, 1, 1, 8]}> : (` + v + `) -> ` + b + `
  %yX = "graph.mul"(%x, %sbX) : (` + x + `, ` + b + `) -> ` + x + `
  %zX = "graph.add"(%yX, %tbX) : (` + x + `, ` + b + `) -> ` + x + `
  %oX = "graph.relu"(%zX) : (` + x + `) -> ` + x)
	}
	args := func(i int) string {
		return strings.ReplaceAll(", %xX: "+x+", %varX: "+v+", %gammaX: "+v+", %meanX: "+v+", %betaX: "+v, "X", fmt.Sprint(i))
	}
	// Each its own ε: the groups share no value, so only the merge of
	// groups reading arguments (and constants) puts them together.
	eps := `
  %eps1 = "graph.constant"() <{value = dense<1.0e-05> : tensor<bf16>}> : () -> tensor<bf16>
  %eps2 = "graph.constant"() <{value = dense<1.0e-03> : tensor<bf16>}> : () -> tensor<bf16>`
	bias := `
  %bf = "graph.cast"(%bias) : (` + v + `) -> tensor<8xf32>
  %bb = "graph.reshape"(%bf) <{shape = [1, 1, 1, 8]}> : (tensor<8xf32>) -> tensor<1x1x1x8xf32>
  %xf = "graph.cast"(%x1) : (` + x + `) -> tensor<2x4x4x8xf32>
  %o1 = "graph.add"(%xf, %bb) : (tensor<2x4x4x8xf32>, tensor<1x1x1x8xf32>) -> tensor<2x4x4x8xf32>`
	xs := x + ", " + x
	for _, c := range []struct {
		name, src string
		kinds     []string
		log       []string
	}{
		{"stored", fn("%eps1: tensor<bf16>"+args(1), x, norm(1)+"\n  return %o1 : "+x),
			[]string{"pointwise", "pointwise"}, []string{"its broadcast readers would compute 'graph.rsqrt'"}},
		{"scale-returned", fn("%eps1: tensor<bf16>"+args(1), x+", "+v, norm(1)+"\n  return %o1, %scale1 : "+x+", "+v),
			[]string{"pointwise", "pointwise"}, nil},
		{"one-kernel-per-space", fn(args(1)[2:]+args(2), xs, eps+norm(1)+norm(2)+"\n  return %o1, %o2 : "+xs),
			[]string{"pointwise", "pointwise", "pointwise"}, []string{"groups reading only arguments over one space"}},
		{"cheap-recomputed", fn("%x1: "+x+", %bias: "+v, "tensor<2x4x4x8xf32>", bias+"\n  return %o1 : tensor<2x4x4x8xf32>"),
			[]string{"pointwise"}, []string{"inlined broadcast producer"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, log := fuse(t, c.src, fusion.DefaultOptions())
			if got := kinds(m); fmt.Sprint(got) != fmt.Sprint(c.kinds) {
				t.Errorf("kinds %v, want %v\n%s\n%s", got, c.kinds, ir.Sprint(m, ir.PrintOptions{}), log)
			}
			for _, want := range c.log {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			// Only a kernel over [C] computes the rsqrt.
			m.Walk(func(op *ir.Operation) bool {
				if op.Name() == "graph.rsqrt" {
					if f := op.ParentOp(); f == nil || f.Name() != "graph.fusion" || f.Result(0).Type().String() != "tensor<8xbf16>" {
						t.Errorf("rsqrt outside a kernel over [C]:\n%s", ir.Sprint(m, ir.PrintOptions{}))
					}
				}
				return true
			})
			for _, pipeline := range []string{
				"builtin.module(func.func(graph-decompose,graph-fuse),convert-graph-to-loop)",
				"builtin.module(lower-to-gpu)",
			} {
				if err := passtest.CheckSemantics(&passtest.Program{Func: "f", Source: c.src}, pipeline, 1); err != nil {
					t.Errorf("%s: %v", pipeline, err)
				}
			}
		})
	}
}
