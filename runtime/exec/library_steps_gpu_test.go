package exec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// stepTime is the median device time of one plan step that queues work.
type stepTime struct {
	label string
	ms    float64
}

// stepTimes times each step of b's plan that queues device work (kernel
// launches, library products) as Bound.Time times a whole launch: a
// 256 MiB clear before each of iters launches, an event pair around every
// step, medians over the launches. Steps under 1 µs (host steps) are left
// out.
func stepTimes(t *testing.T, b *Bound, warmup, iters int) []stepTime {
	t.Helper()
	dev := b.rt.cuda
	ops := b.plan.fn.Region(0).Front().Ops()
	orig := b.plan.steps
	defer func() { b.plan.steps = orig }()
	events := make([][]*cuda.Event, len(orig)*2)
	iter := -1
	wrapped := make([]stepFunc, len(orig))
	for i, s := range orig {
		wrapped[i] = func(r *runState) error {
			if iter >= 0 {
				if err := events[2*i][iter].Record(r.stream); err != nil {
					return err
				}
			}
			err := s(r)
			if iter >= 0 && err == nil {
				err = events[2*i+1][iter].Record(r.stream)
			}
			return err
		}
	}
	for i := range events {
		for range iters {
			e, err := dev.NewEvent()
			if err != nil {
				t.Fatal(err)
			}
			defer e.Destroy()
			events[i] = append(events[i], e)
		}
	}
	flush, err := dev.Alloc(flushBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(flush)
	b.plan.steps = wrapped
	for range warmup {
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	for iter = 0; iter < iters; iter++ {
		if err := dev.MemsetD32(flush, 0, flushBytes/4, b.stream()); err != nil {
			t.Fatal(err)
		}
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	var out []stepTime
	for i, op := range ops {
		ts := make([]float64, iters)
		for j := range iters {
			ms, err := cuda.Elapsed(events[2*i][j], events[2*i+1][j])
			if err != nil {
				t.Fatal(err)
			}
			ts[j] = float64(ms)
		}
		slices.Sort(ts)
		if ms := ts[iters/2]; ms >= 0.001 {
			label := op.Name()
			if op.Name() == gpu.LaunchFuncOp {
				label = ir.Sprint(op, ir.PrintOptions{})
				if i := strings.Index(label, "::@"); i >= 0 {
					label = strings.Fields(label[i+3:])[0]
				}
			} else if op.Name() == gpu.LibraryMatmulOp {
				a, bb := op.Operand(0).Type(), op.Operand(1).Type()
				ta, tb := gpu.LibraryTransposes(op)
				label = fmt.Sprintf("library_matmul %s%s × %s%s", a, map[bool]string{true: "ᵀ"}[ta], bb, map[bool]string{true: "ᵀ"}[tb])
			}
			out = append(out, stepTime{label, ms})
		}
	}
	return out
}

// stepsProgram lowers src with the convert-loop-to-gpu options opts.
func stepsProgram(t *testing.T, src, opts string) *Program {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "steps.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop,convert-loop-to-gpu{" + opts + "},expand-math,canonicalize,cse)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGPUStepTimes (skipped without a GPU and cuBLASLt; the bench sizes
// only with STRATA_STEP_TIMES set, ≈ 20 s of device time) logs the device
// time of each product and kernel of the benchmark's matmul programs on
// cuBLASLt: mm_bias_gelu's epilogue kernel under several launch
// configurations next to a bias add alone (the same bytes, the copy
// floor), and the training step of mlp_train (testdata/mlp_train_grad.mlir:
// the bench program after graph-autodiff), both also on Strata's mma
// kernels with the default tiling and 128x128x64s3w64. Without the
// variable it runs a
// small mm_bias_gelu and checks it against the interpreter.
func TestGPUStepTimes(t *testing.T) {
	rt := openGPU(t)
	if err := cublaslt.Load(); err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	full := os.Getenv("STRATA_STEP_TIMES") != ""
	m, k, n := int64(256), int64(128), int64(192)
	if full {
		m, k, n = 8192, 4096, 4096
	}
	rng := rand.New(rand.NewPCG(1, 5))
	x, w, bias := randomHalf(t, rng, ir.BF16, m, k), randomHalf(t, rng, ir.BF16, k, n), randomHalf(t, rng, ir.BF16, n)
	p, mn := tensorText([]int64{m, n}, "bf16"), tensorText([]int64{n}, "bf16")
	mmBiasGelu := fmt.Sprintf(`func.func @main(%%x: %s, %%w: %s, %%b: %s) -> %s {
  %%0 = "graph.matmul"(%%x, %%w) : (%[1]s, %[2]s) -> %[4]s
  %%1 = "graph.add"(%%0, %%b) : (%[4]s, %[3]s) -> %[4]s
  %%r = "graph.gelu"(%%1) <{approximate = "tanh"}> : (%[4]s) -> %[4]s
  return %%r : %[4]s
}`, tensorText([]int64{m, k}, "bf16"), tensorText([]int64{k, n}, "bf16"), mn, p)
	biasAdd := fmt.Sprintf(`func.func @main(%%p: %[1]s, %%b: %[2]s) -> %[1]s {
  %%r = "graph.add"(%%p, %%b) : (%[1]s, %[2]s) -> %[1]s
  return %%r : %[1]s
}`, p, mn)
	biasGelu := fmt.Sprintf(`func.func @main(%%p: %[1]s, %%b: %[2]s) -> %[1]s {
  %%0 = "graph.add"(%%p, %%b) : (%[1]s, %[2]s) -> %[1]s
  %%r = "graph.gelu"(%%0) <{approximate = "tanh"}> : (%[1]s) -> %[1]s
  return %%r : %[1]s
}`, p, mn)
	prod := randomHalf(t, rng, ir.BF16, m, n)
	show := func(name string, prog *Program, args []interp.Value) {
		t.Helper()
		b, err := prog.Prepare(rt, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free()
		whole, err := b.Time(3, 20)
		if err != nil {
			t.Fatal(err)
		}
		steps := stepTimes(t, b, 3, 20)
		var parts []string
		for _, s := range steps {
			parts = append(parts, fmt.Sprintf("%s %.4f", s.label, s.ms))
		}
		t.Logf("STEPS %-40s whole %.4f ms: %s", name, whole, strings.Join(parts, ", "))
	}
	def := stepsProgram(t, mmBiasGelu, "matmul=cublaslt")
	got, err := def.Run(rt, "main", []interp.Value{x, w, bias})
	if err != nil {
		t.Fatal(err)
	}
	if !full {
		compare(t, def, []interp.Value{x, w, bias}, got, 1.0/128)
		show("mm_bias_gelu small", def, []interp.Value{x, w, bias})
		return
	}
	show("mm_bias_gelu matmul=cublaslt", def, []interp.Value{x, w, bias})
	for _, opts := range []string{"", "mma-tile=128x128x64s3w64"} {
		show("mm_bias_gelu "+opts, stepsProgram(t, mmBiasGelu, opts), []interp.Value{x, w, bias})
	}
	for _, opts := range []string{"", "vector=8", "vector=2", "block=128", "block=512", "block=1024", "max-blocks=1056", "max-blocks=4224", "index-bits=32"} {
		show("bias+gelu "+opts, stepsProgram(t, biasGelu, opts), []interp.Value{prod, bias})
	}
	for _, opts := range []string{"", "vector=8"} {
		show("bias add "+opts, stepsProgram(t, biasAdd, opts), []interp.Value{prod, bias})
	}
	show("bias+gelu cvt.rn.bf16x2", packedRounding(t, stepsProgram(t, biasGelu, "")), []interp.Value{prod, bias})
	src, err := os.ReadFile("testdata/mlp_train_grad.mlir")
	if err != nil {
		t.Fatal(err)
	}
	ft := []struct{ shape []int64 }{{[]int64{8192, 4096}}, {[]int64{4096, 16384}}, {[]int64{16384, 4096}}}
	var args []interp.Value
	for _, f := range ft {
		args = append(args, randomHalf(t, rng, ir.BF16, f.shape...))
	}
	seed, err := interp.FromFloat64s(ir.F32, nil, []float64{1})
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, interp.BufferFromTensor(seed))
	for _, opts := range []string{"matmul=cublaslt", "", "mma-tile=128x128x64s3w64"} {
		prog := stepsProgram(t, strings.Replace(string(src), "@loss_grad", "@main", 1), opts)
		show("mlp_train "+opts, prog, args)
		if opts != "matmul=cublaslt" {
			continue
		}
		packed := packedRounding(t, prog)
		show("mlp_train matmul=cublaslt cvt.rn.bf16x2", packed, args)
		a, err := prog.Run(rt, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		b, err := packed.Run(rt, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			x, y := tensor(t, a[i]).Float64s(), tensor(t, b[i]).Float64s()
			diff := 0
			for j := range x {
				if x[j] != y[j] && !(x[j] != x[j] && y[j] != y[j]) {
					diff++
				}
			}
			t.Logf("mlp_train result %d: %d of %d elements differ with the packed roundings", i, diff, len(x))
		}
	}
}

// bf16Round is the native backend's scalar f32 → bf16 rounding.
var bf16Round = regexp.MustCompile(`cvt\.rn\.bf16\.f32 (%rs\d+), (%f\d+);`)

// packedRounding returns p with every scalar f32 → bf16 rounding of its
// PTX done by the packed instruction (cvt.rn.bf16x2.f32 of the value
// twice, the low half kept): ptxas makes the scalar form an F2F, which
// issues at 16 a clock an SM, and the packed one an F2FP; the same
// rounding (to nearest even).
func packedRounding(t *testing.T, p *Program) *Program {
	t.Helper()
	ptx := map[string]string{}
	n := 0
	for name, text := range p.PTX() {
		ptx[name] = bf16Round.ReplaceAllStringFunc(text, func(m string) string {
			n++
			g := bf16Round.FindStringSubmatch(m)
			return fmt.Sprintf("{ .reg .b32 %%pk; .reg .b16 %%hi; cvt.rn.bf16x2.f32 %%pk, %s, %s; mov.b32 {%s, %%hi}, %%pk; }", g[2], g[2], g[1])
		})
	}
	if n == 0 {
		t.Fatal("no scalar bf16 rounding in the PTX")
	}
	q, err := NewProgram(p.Module(), ptx)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
