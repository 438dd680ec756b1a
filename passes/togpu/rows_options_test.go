package togpu_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
	"pgregory.net/rapid"
)

// rowProgram is a graph function of one op over rows of cols floats of
// type elt (rows < 0: a dynamic row count): "layernorm" (with weight and
// bias), "softmax" or "rowsum".
func rowProgram(op string, rows, cols int64, elt string) string {
	r := fmt.Sprint(rows)
	if rows < 0 {
		r = "?"
	}
	x := fmt.Sprintf("tensor<%sx%dx%s>", r, cols, elt)
	switch op {
	case "layernorm":
		v := fmt.Sprintf("tensor<%dx%s>", cols, elt)
		return fmt.Sprintf(`func.func @main(%%x: %[1]s, %%w: %[2]s, %%b: %[2]s) -> %[1]s {
  %%0 = "graph.layer_norm"(%%x, %%w, %%b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (%[1]s, %[2]s, %[2]s) -> %[1]s
  return %%0 : %[1]s
}`, x, v)
	case "softmax":
		return fmt.Sprintf(`func.func @main(%%x: %[1]s) -> %[1]s {
  %%0 = "graph.softmax"(%%x) <{axis = -1 : i64}> : (%[1]s) -> %[1]s
  return %%0 : %[1]s
}`, x)
	}
	out := fmt.Sprintf("tensor<%sx%s>", r, elt)
	return fmt.Sprintf(`func.func @main(%%x: %[1]s) -> %[2]s {
  %%0 = "graph.reduce_sum"(%%x) <{axes = [1], keepdims = false}> : (%[1]s) -> %[2]s
  return %%0 : %[2]s
}`, x, out)
}

// TestRowRereadShuffleMerge runs layer norms, softmaxes and row sums
// lowered with row-reread, row-shuffle-merge and row-evict-last (each
// alone and together, with and without row-welford) in the interpreter
// against the graph program:
// register-held rows of one warp and of 2 to 16 warps (the butterfly
// across warps), a warp per row, rows too long for registers, odd rows
// (no vector split), a block whose warps are not a power of two (the
// sequential merge), dynamic row counts and bf16 rows.
func TestRowRereadShuffleMerge(t *testing.T) {
	cases := []struct {
		op, elt             string
		rows, cols, dynRows int64 // rows < 0: dynamic, run with dynRows
		opts                string
	}{
		{"layernorm", "f32", 3, 256, 0, "block=32 rows-per-block=1"},
		{"layernorm", "f32", 2, 512, 0, "block=64 rows-per-block=1"},
		{"layernorm", "f32", 2, 1024, 0, "block=128 rows-per-block=1"},
		{"layernorm", "f32", 2, 4096, 0, "block=512 rows-per-block=1"},
		{"layernorm", "f32", 5, 128, 0, "block=128"},
		{"layernorm", "f32", 2, 2048, 0, "block=32 rows-per-block=1"},
		{"layernorm", "f32", 3, 100, 0, "block=64 rows-per-block=1"},
		{"layernorm", "f32", 2, 384, 0, "block=96 rows-per-block=1"},
		{"layernorm", "f32", -1, 256, 7, "block=64 rows-per-block=1"},
		{"layernorm", "bf16", 2, 1024, 0, "block=128 rows-per-block=1"},
		{"softmax", "f32", 3, 1024, 0, "block=128 rows-per-block=1"},
		{"softmax", "f32", 2, 8192, 0, "block=512 rows-per-block=1"},
		{"softmax", "f32", 4, 96, 0, "block=64 rows-per-block=1"},
		{"softmax", "f32", -1, 512, 5, "block=128 rows-per-block=1"},
		{"softmax", "bf16", 2, 1024, 0, "block=256 rows-per-block=1"},
		{"rowsum", "f32", 3, 2048, 0, "block=256 rows-per-block=1"},
		{"rowsum", "f32", 3, 300, 0, "block=128 rows-per-block=1"},
		{"rowsum", "bf16", 2, 1024, 0, "block=512 rows-per-block=1"},
	}
	variants := []string{
		"row-reread=true",
		"row-shuffle-merge=true",
		"row-evict-last=true",
		"row-reread=true row-shuffle-merge=true row-evict-last=true",
		"row-welford=false row-reread=true row-shuffle-merge=true",
	}
	// Each case with one variant and each variant with one case, unless
	// STRATA_TEST_LONG asks for every pair (make test-long).
	run := testsize.Cover(len(cases), len(variants), nil)
	for i, tc := range cases {
		for j, variant := range variants {
			if !run(i, j) {
				continue
			}
			rows := tc.rows
			if rows < 0 {
				rows = tc.dynRows
			}
			name := fmt.Sprintf("%s-%s-%dx%d/dynamic=%v/%s", tc.op, tc.elt, rows, tc.cols, tc.rows < 0,
				strings.ReplaceAll(strings.TrimSpace(tc.opts+" "+variant), " ", ","))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				src := rowProgram(tc.op, tc.rows, tc.cols, tc.elt)
				pipeline := fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{%s %s},canonicalize,cse)", tc.opts, variant)
				m := lowerGraph(t, src, pipeline)
				ctx := dialects.NewContext()
				ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ref.mlir"})
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(rows), uint64(tc.cols)))
				x := offsetRows(t, rng, []int64{rows, tc.cols})
				args := []*interp.Tensor{x}
				if tc.op == "layernorm" {
					args = append(args, offsetRows(t, rng, []int64{tc.cols}), offsetRows(t, rng, []int64{tc.cols}))
				}
				vals, bufs := make([]interp.Value, len(args)), make([]interp.Value, len(args))
				for i, a := range args {
					if tc.elt == "bf16" {
						if a, err = interp.FromFloat64s(ir.BF16, a.Shape(), a.Float64s()); err != nil {
							t.Fatal(err)
						}
					}
					vals[i], bufs[i] = a, interp.BufferFromTensor(a)
				}
				want, err := interp.New(ref).Call("main", vals...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := interp.New(m).Call("main", bufs...)
				if err != nil {
					t.Fatalf("%v\n%s", err, m)
				}
				if err := passtest.Compare(got[0], want[0]); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestRowRereadLoads checks the benchmark's layer norm row (4096 floats,
// 8 a thread of 512): with row-reread the write loop loads x again (x
// twice, w and b once: 4 loads a thread and element instead of 3), and
// with row-shuffle-merge (the default) the warps' partials cross the block
// in a second butterfly (log2 of the 16 warps more shuffles of each
// statistic), still behind one barrier.
func TestRowRereadLoads(t *testing.T) {
	for _, tc := range []struct {
		opts                     string
		barriers, shuffles, load int
	}{
		{"row-shuffle-merge=false", 1, 10, 3 * 8},
		{"row-shuffle-merge=false row-reread=true", 1, 10, 4 * 8},
		{"", 1, 10 + 2*4, 3 * 8},
		{"row-reread=true", 1, 10 + 2*4, 4 * 8},
		{"row-reread=true row-welford=false", 2, 2 * (5 + 4), 4 * 8},
	} {
		m := lowerGraph(t, layerNormProgram(16384, 4096),
			fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{%s},canonicalize,cse)", tc.opts))
		c := countKernelOps(m)
		globalLoads := 0
		m.Walk(func(o *ir.Operation) bool {
			if o.Name() == "loop.load" && o.ParentOfType(gpu.FuncOp) != nil && o.Operand(0).Type().(*ir.MemRefType).MemorySpace == nil {
				globalLoads++
			}
			return true
		})
		if c[gpu.BarrierOp] != tc.barriers || c[gpu.ShuffleOp] != tc.shuffles || globalLoads != tc.load {
			t.Errorf("%s: %d barriers, %d shuffles, %d global loads; want %d, %d, %d",
				tc.opts, c[gpu.BarrierOp], c[gpu.ShuffleOp], globalLoads, tc.barriers, tc.shuffles, tc.load)
		}
	}
}

// TestLoopToGPURowOptionsPreservesSemantics is the property test of the
// row options: random graph programs of reductions, composites (softmax,
// layer norm) and elementwise ops lowered with a block per row of 4 warps
// (the shuffle merge across them) and write loops that read their rows
// again, their loads marked loop.evict_last, run in the interpreter
// against the graph program. (Register-held
// rows, where row-reread applies, need rows of at least 2·128 elements:
// TestRowRereadShuffleMerge has those.)
func TestLoopToGPURowOptionsPreservesSemantics(t *testing.T) {
	passtest.PreservesSemantics(t, "builtin.module(lower-to-loop,convert-loop-to-gpu{block=128 rows-per-block=1 vector=2 row-reread=true row-shuffle-merge=true row-evict-last=true},canonicalize,cse)",
		passtest.GraphProgram(passtest.Config{MaxDim: 5, MaxOps: 8, Floats: []ir.Type{ir.F32, ir.F64},
			Families: []string{"reduce", "reduce", "composite", "composite", "unary", "binary", "shape", "constant"}}))
}

// TestRowEvictLastPTX checks row-evict-last (the default) down to PTX:
// every global load of the benchmark's layer norm and softmax kernels (2
// vectors of x, w and b a thread of 512; 4 of x) carries loop.evict_last
// and, through both backends, becomes
// ld.global.L1::evict_last.L2::cache_hint.v4.f32 under an L2::evict_last
// policy, which ptxas accepts; without the option no load has the hint,
// and neither row sums (no write loop) nor pointwise kernels get it.
func TestRowEvictLastPTX(t *testing.T) {
	const hinted = "ld.global.L1::evict_last.L2::cache_hint.v4.f32"
	for _, tc := range []struct {
		src, opts     string
		marked, loads int
	}{
		{layerNormProgram(16384, 4096), "block=256", 3 * 8, 6},
		{layerNormProgram(16384, 4096), "block=256 row-evict-last=false", 0, 0},
		{rowProgram("softmax", 8192, 8192, "f32"), "row-evict-last=true", 16, 4},
		{rowProgram("rowsum", 8192, 8192, "f32"), "row-evict-last=true", 0, 0},
		{`func.func @main(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  return %0 : tensor<1024xf32>
}`, "row-evict-last=true", 0, 0},
	} {
		m := lowerGraph(t, tc.src, "builtin.module(lower-to-loop,convert-loop-to-gpu{"+tc.opts+"},expand-math,canonicalize,cse)")
		marked := 0
		m.Walk(func(o *ir.Operation) bool {
			if o.Name() == "loop.load" && o.Attr("loop.evict_last") != nil {
				marked++
			}
			return true
		})
		if marked != tc.marked {
			t.Errorf("%s: %d loads marked, want %d", tc.opts, marked, tc.marked)
		}
		mod, err := llvm.TranslateAll(llvm.GPUModules(m))
		if err != nil {
			t.Fatal(err)
		}
		for _, backend := range []string{"native", "llc"} {
			ptx, ok := backendPTX(t, mod, backend)
			if !ok {
				continue
			}
			if n := strings.Count(ptx, hinted); n != tc.loads || strings.Count(ptx, "createpolicy.fractional.L2::evict_last.b64") != tc.loads {
				t.Errorf("%s, %s: %d hinted loads, want %d\n%s", tc.opts, backend, n, tc.loads, ptx)
			}
			ptxasAccepts(t, ptx)
		}
	}
}

// TestRowVectorBlockPreservesSemantics draws rows whose length is no
// multiple of vector × block but is of vector × a smaller whole number of
// warps (768 columns at 256 threads of 4: GPT-2's layer norms): the row
// mapping takes fewer threads of vector steps held in registers. Layer
// norms, softmaxes and row sums in f32 and bf16, lowered, against the
// graph program in the interpreter.
func TestRowVectorBlockPreservesSemantics(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		op := rapid.SampledFrom([]string{"layernorm", "softmax", "rowsum"}).Draw(rt, "op")
		elt := rapid.SampledFrom([]string{"f32", "bf16"}).Draw(rt, "elt")
		block := rapid.SampledFrom([]int64{64, 128, 256}).Draw(rt, "block")
		vector := rapid.SampledFrom([]int64{2, 4}).Draw(rt, "vector")
		warps := rapid.Int64Range(1, block/32-1).Draw(rt, "warps")
		steps := rapid.Int64Range(1, togpu.RegisterRow/vector).Draw(rt, "steps")
		cols := 32 * warps * vector * steps
		if cols <= togpu.ShortRow || cols%(vector*block) == 0 {
			rt.Skip("a warp a row, or vector steps at the block's threads")
		}
		rows := int64(2)
		src := rowProgram(op, rows, cols, elt)
		pipeline := fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{block=%d vector=%d rows-per-block=0},canonicalize,cse)", block, vector)
		m := lowerGraph(t, src, pipeline)
		m.Walk(func(o *ir.Operation) bool {
			if gpu.IsKernel(o) {
				d := o.Attr(togpu.LaunchAttr).(ir.DictAttr)
				if got := d.Get("block").(ir.IntegerAttr).Value; got%32 != 0 || got > max(block, togpu.RegisterRowBlock) || cols%got != 0 {
					rt.Fatalf("%d columns at block=%d vector=%d: a block of %d threads", cols, block, vector, got)
				}
			}
			return true
		})
		ctx := dialects.NewContext()
		ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ref.mlir"})
		if err != nil {
			rt.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
		args := []*interp.Tensor{offsetRows(t, rng, []int64{rows, cols})}
		if op == "layernorm" {
			args = append(args, offsetRows(t, rng, []int64{cols}), offsetRows(t, rng, []int64{cols}))
		}
		vals, bufs := make([]interp.Value, len(args)), make([]interp.Value, len(args))
		for i, a := range args {
			if elt == "bf16" {
				if a, err = interp.FromFloat64s(ir.BF16, a.Shape(), a.Float64s()); err != nil {
					rt.Fatal(err)
				}
			}
			vals[i], bufs[i] = a, interp.BufferFromTensor(a)
		}
		want, err := interp.New(ref).Call("main", vals...)
		if err != nil {
			rt.Fatal(err)
		}
		got, err := interp.New(m).Call("main", bufs...)
		if err != nil {
			rt.Fatalf("%v\n%s", err, m)
		}
		if err := passtest.Compare(got[0], want[0]); err != nil {
			rt.Error(err)
		}
	})
}

// TestRow16BitVector checks that a row nest moving only 16-bit elements
// takes 16-byte steps (twice the option's 4-byte lanes) where every row
// loop divides into them, and the option's count otherwise: GPT-2's add
// and layer norm over 768 bf16 columns at 96 threads of 8, the f32 one at
// 192 of 4, 640 bf16 columns at 160 threads of 4 as in f32 (no whole
// warps divide them into 8-element steps); each lowered program against
// the interpreter.
func TestRow16BitVector(t *testing.T) {
	cases := []struct {
		name, src   string
		cols, block int64
		bf16        bool
	}{
		{"add+layernorm bf16", addLayerNormBF16(3, 768), 768, 96, true},
		{"layernorm f32", rowProgram("layernorm", 3, 768, "f32"), 768, 192, false},
		{"layernorm bf16, 16-byte steps", rowProgram("layernorm", 3, 768, "bf16"), 768, 96, true},
		{"softmax bf16, 640 columns: 4-element steps", rowProgram("softmax", 3, 640, "bf16"), 640, 160, true},
		{"softmax f32, 640 columns", rowProgram("softmax", 3, 640, "f32"), 640, 160, false},
	}
	for _, tc := range cases {
		m := lowerGraph(t, tc.src, "builtin.module(lower-to-loop,convert-loop-to-gpu,canonicalize,cse)")
		var got []int64
		m.Walk(func(o *ir.Operation) bool {
			if gpu.IsKernel(o) {
				got = append(got, o.Attr(togpu.LaunchAttr).(ir.DictAttr).Get("block").(ir.IntegerAttr).Value)
			}
			return true
		})
		if len(got) != 1 {
			t.Fatalf("%s: %d kernels, want 1\n%s", tc.name, len(got), m)
		}
		if got[0] != tc.block {
			t.Errorf("%s: a block of %d threads, want %d", tc.name, got[0], tc.block)
		}
		ctx := dialects.NewContext()
		ref, err := ir.Parse(ctx, tc.src, ir.ParseOptions{Filename: "ref.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, uint64(tc.cols)))
		var args []*interp.Tensor
		for _, a := range ref.Region(0).Front().First().Region(0).Front().Arguments() {
			args = append(args, offsetRows(t, rng, a.Type().(*ir.TensorType).Shape()))
		}
		vals, bufs := make([]interp.Value, len(args)), make([]interp.Value, len(args))
		for i, a := range args {
			if tc.bf16 {
				if a, err = interp.FromFloat64s(ir.BF16, a.Shape(), a.Float64s()); err != nil {
					t.Fatal(err)
				}
			}
			vals[i], bufs[i] = a, interp.BufferFromTensor(a)
		}
		want, err := interp.New(ref).Call("main", vals...)
		if err != nil {
			t.Fatal(err)
		}
		res, err := interp.New(m).Call("main", bufs...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i := range want {
			if err := passtest.Compare(res[i], want[i]); err != nil {
				t.Errorf("%s: result %d: %v", tc.name, i, err)
			}
		}
	}
}
