package togpu_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	llir "github.com/llir/llvm/ir"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/nvptx"
)

// parse reads a testdata file into a fresh context.
func parse(t *testing.T, name string) (*ir.Context, *ir.Operation) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, string(src), ir.ParseOptions{Filename: name})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, m
}

// inputs draws random inputs for @main, giving each dynamic dim of
// argument i the size dyn[i][k] (k-th dynamic dim).
func inputs(t *testing.T, m *ir.Operation, dyn [][]int64, seed int64) []interp.Value {
	t.Helper()
	fn := interp.New(m).Func("main")
	ft, err := interp.FuncType(fn)
	if err != nil {
		t.Fatal(err)
	}
	static := make([]ir.Type, len(ft.Inputs))
	for i, in := range ft.Inputs {
		mt := in.(*ir.MemRefType)
		shape := append([]int64(nil), mt.Shape()...)
		k := 0
		for d := range shape {
			if shape[d] == ir.Dynamic {
				shape[d] = dyn[i][k]
				k++
			}
		}
		static[i] = ir.MemRefOf(shape, mt.ElementType())
	}
	args, err := interp.RandomInputs(ir.FunctionOf(static, nil), seed)
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// run calls @main on copies of args and returns its results as tensors.
func run(t *testing.T, m *ir.Operation, args []interp.Value) []*interp.Tensor {
	t.Helper()
	copies := make([]interp.Value, len(args))
	for i, a := range args {
		t0, err := a.(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		copies[i] = interp.BufferFromTensor(t0)
	}
	res, err := interp.New(m).Call("main", copies...)
	if err != nil {
		t.Fatalf("running:\n%s\n%v", m, err)
	}
	out := make([]*interp.Tensor, len(res))
	for i, r := range res {
		switch r := r.(type) {
		case *interp.Buffer:
			if out[i], err = r.Tensor(); err != nil {
				t.Fatal(err)
			}
		case *interp.Tensor:
			out[i] = r
		}
	}
	return out
}

var semanticsCases = []struct {
	file string
	dyn  [][]int64 // per argument, the sizes of its dynamic dims
}{
	{"elementwise.mlir", [][]int64{{7}, {}}},
	{"elementwise.mlir", [][]int64{{0}, {}}},
	{"elementwise_bf16.mlir", [][]int64{{7}, {}}},
	{"elementwise_mixed.mlir", [][]int64{{5}, {}}},
	{"rowsum.mlir", [][]int64{{37}}},
	{"rowsum.mlir", [][]int64{{600}}},
	{"rowsum.mlir", [][]int64{{0}}},
	{"softmax.mlir", [][]int64{{3, 300}}},
	{"softmax.mlir", [][]int64{{5, 7}}},
	{"softmax.mlir", [][]int64{{0, 7}}}, // empty at run time: zero rows,
	{"softmax.mlir", [][]int64{{5, 0}}}, // zero columns,
	{"softmax.mlir", [][]int64{{0, 0}}}, // both
	{"layernorm.mlir", [][]int64{{3}, {}, {3}}},
	{"layernorm.mlir", [][]int64{{11}, {}, {11}}},
	{"layernorm.mlir", [][]int64{{0}, {}, {0}}},
	{"matmul.mlir", [][]int64{{5}, {}}},
	{"pointwise3d.mlir", [][]int64{{3}, {}}},
	{"pointwise3d.mlir", [][]int64{{0}, {}}},
	{"reverse.mlir", [][]int64{{300}}},
	{"reverse.mlir", [][]int64{{0}}},
	{"softmax_static.mlir", [][]int64{{}}},
	{"center_inplace.mlir", [][]int64{{}}},
	{"softmax4d.mlir", [][]int64{{2}}},
	{"softmax4d.mlir", [][]int64{{0}}},
	{"softmax_cast.mlir", [][]int64{{}}},
	{"softmax_bf16.mlir", [][]int64{{}}},
	{"index32_views.mlir", [][]int64{{}, {}, {}}}, // pad, concat, slice (negative offsets), gather
	{"colsum.mlir", [][]int64{{}}},
	{"colsum_bf16.mlir", [][]int64{{}}},
	{"colsum_narrow.mlir", [][]int64{{}}},
	{"colsum_stats.mlir", [][]int64{{}}},
	{"layernorm_768.mlir", [][]int64{{}}},
	{"empty_static.mlir", [][]int64{{}, {}, {}}},
	{"head_split.mlir", [][]int64{{}}},
	{"pad_nhwc.mlir", [][]int64{{}}},
	{"decode_softmax.mlir", [][]int64{{}, {}, {}}},
}

var configs = []struct {
	name string
	cfg  togpu.Config
}{
	{"default", togpu.DefaultConfig},
	{"small", togpu.Config{Block: 64, Vector: 2, RowsPerBlock: 0, MaxBlocks: 2}},
	{"warp-rows", togpu.Config{Block: 32, Vector: 1, RowsPerBlock: 2, MaxBlocks: 1}},
	{"block-rows", togpu.Config{Block: 128, Vector: 4, RowsPerBlock: 1, MaxBlocks: 65536}},
	{"index32", index32(togpu.DefaultConfig)},
	{"index32-small", index32(togpu.Config{Block: 64, Vector: 2, RowsPerBlock: 0, MaxBlocks: 2})},
	{"index32-warp-rows", index32(togpu.Config{Block: 32, Vector: 1, RowsPerBlock: 2, MaxBlocks: 1})},
}

// index32 is cfg with 32-bit index arithmetic.
func index32(cfg togpu.Config) togpu.Config {
	cfg.IndexBits = 32
	return cfg
}

// TestPreservesSemantics runs hand-written loop-level programs before and
// after the pass in the interpreter, which simulates the launches.
func TestPreservesSemantics(t *testing.T) {
	for _, tc := range semanticsCases {
		for _, c := range configs {
			t.Run(fmt.Sprintf("%s/%v/%s", tc.file, tc.dyn, c.name), func(t *testing.T) {
				_, before := parse(t, tc.file)
				args := inputs(t, before, tc.dyn, 1)
				want := run(t, before, args)
				ctx, after := parse(t, tc.file)
				if err := togpu.Run(ctx, after, c.cfg); err != nil {
					t.Fatal(err)
				}
				if err := ir.Verify(after); err != nil {
					t.Fatalf("verifier: %v\n%s", err, after)
				}
				checkGPULevel(t, after)
				got := run(t, after, args)
				for i := range want {
					if err := passtest.Compare(got[i], want[i]); err != nil {
						t.Errorf("result %d: %v\n%s", i, err, after)
					}
				}
			})
		}
	}
}

// checkGPULevel checks the contract of the output: no loop.parallel left,
// kernels see only 1-D memrefs and no loop.dim.
func checkGPULevel(t *testing.T, m *ir.Operation) {
	t.Helper()
	m.Walk(func(o *ir.Operation) bool {
		switch {
		case o.Name() == "loop.parallel":
			t.Errorf("loop.parallel left at %s", o.Loc())
		case o.Name() == "loop.dim" && o.ParentOfType(gpu.FuncOp) != nil:
			t.Errorf("loop.dim inside a kernel at %s", o.Loc())
		}
		if o.ParentOfType(gpu.FuncOp) != nil {
			for _, v := range o.Operands() {
				if mt, ok := v.Type().(*ir.MemRefType); ok && len(mt.Shape()) != 1 {
					t.Errorf("'%s' in a kernel uses %s", o.Name(), mt)
				}
			}
		}
		return true
	})
}

// TestMappings checks which mapping and parameters each nest gets.
func TestMappings(t *testing.T) {
	tests := []struct {
		file string
		cfg  togpu.Config
		want []string // per kernel: mapping/block/vector/rows_per_block
	}{
		{"elementwise.mlir", togpu.DefaultConfig, []string{"pointwise/256/4/0"}},
		// The vector option counts 4-byte lanes: 16-bit nests take twice
		// the points, unless they also move f32.
		{"elementwise_bf16.mlir", togpu.DefaultConfig, []string{"pointwise/256/8/0"}},
		{"elementwise_mixed.mlir", togpu.DefaultConfig, []string{"pointwise/256/4/0"}},
		{"rowsum.mlir", togpu.DefaultConfig, []string{"row/256/1/1"}},
		{"softmax.mlir", togpu.DefaultConfig, []string{"row/256/1/1"}},
		// Short static rows: a warp per row, block/32 rows per block.
		{"layernorm.mlir", togpu.DefaultConfig, []string{"row/256/1/8"}},
		// A scratch buffer read back across threads forces a block per row.
		{"softmax.mlir", togpu.Config{Block: 128, Vector: 4, RowsPerBlock: 4, MaxBlocks: 8}, []string{"row/128/1/1"}},
		{"matmul.mlir", togpu.DefaultConfig, []string{"pointwise/256/1/0", "pointwise/256/1/0", "pointwise/256/1/0"}},
		{"pointwise3d.mlir", togpu.DefaultConfig, []string{"pointwise/256/4/0"}},
		{"pointwise3d.mlir", togpu.Config{Block: 64, Vector: 1, MaxBlocks: 8}, []string{"pointwise/64/1/0"}},
		// Rows of nests with several leading dims, and bf16 rows: f32
		// reductions of extended loads, or a bf16 maximum.
		{"softmax4d.mlir", togpu.DefaultConfig, []string{"row/256/1/8"}},
		{"softmax4d.mlir", togpu.Config{Block: 128, Vector: 4, RowsPerBlock: 1, MaxBlocks: 8}, []string{"row/128/1/1"}},
		{"softmax_cast.mlir", togpu.DefaultConfig, []string{"row/256/1/8"}},
		{"softmax_bf16.mlir", togpu.DefaultConfig, []string{"row/256/1/8"}},
		{"softmax_bf16.mlir", togpu.Config{Block: 128, Vector: 4, RowsPerBlock: 1, MaxBlocks: 8}, []string{"row/128/1/1"}},
		// Column sums: a thread a partial sum (8192 of them), directly
		// (vectorized: a thread 4 adjacent columns, one loop over its rows)
		// or through a divided linear index (vectorized too: the quotient
		// and remainder by 256, a multiple of the 4 lanes, keep a chunk in
		// one row); the 256 sums of the partials keep a warp each.
		{"colsum.mlir", togpu.DefaultConfig, []string{"pointwise/256/4/0", "pointwise/256/4/0", "row/256/1/8"}},
		{"colsum_bf16.mlir", togpu.DefaultConfig, []string{"pointwise/256/4/0"}},
		{"colsum_bf16.mlir", togpu.Config{Block: 64, Vector: 2, MaxBlocks: 2}, []string{"pointwise/64/2/0"}},
		// Lanes never leave NarrowPerBlock elements of a buffer a block.
		{"colsum_narrow.mlir", togpu.DefaultConfig, []string{"pointwise/256/4/0"}},
		{"colsum_narrow.mlir", togpu.Config{Block: 1024, Vector: 4, MaxBlocks: 65536}, []string{"pointwise/1024/2/0"}},
		// Per-row statistics in a column sum are broadcasts: the loop
		// still reads columns (a layer norm's weight gradient).
		{"colsum_stats.mlir", togpu.DefaultConfig, []string{"pointwise/256/4/0"}},
		// Rows of 768: 192 threads of 4 columns, the row in registers; no
		// vector access (vector 1), no change.
		{"layernorm_768.mlir", togpu.DefaultConfig, []string{"row/192/1/1"}},
		{"layernorm_768.mlir", togpu.Config{Block: 256, Vector: 1, MaxBlocks: 8}, []string{"row/256/1/1"}},
		// Nests over an extent of 0 have no kernel: only the two over 4
		// rows of no columns are left.
		{"empty_static.mlir", togpu.DefaultConfig, []string{"row/256/1/8", "row/256/1/8"}},
		// Column blocks of a wider buffer (the q, k, v heads of a fused
		// product): vectorized where the block's offset is aligned; the
		// unaligned block is a copy, whose loads never bound the width
		// (each lane loads what the offset leaves unaligned on its own).
		{"head_split.mlir", togpu.DefaultConfig, []string{"pointwise/256/8/0", "pointwise/256/8/0", "pointwise/256/8/0"}},
		// Channels-last padding: conditions on h and w only are the same
		// for every lane (vectorized, ifs nested, a store in an if); one
		// on the channel, directly or through an if's result, is not
		// (scalar).
		{"pad_nhwc.mlir", togpu.DefaultConfig, []string{"pointwise/256/8/0", "pointwise/256/8/0", "pointwise/256/8/0", "pointwise/256/1/0", "pointwise/256/1/0"}},
		{"pad_nhwc.mlir", togpu.Config{Block: 64, Vector: 2, MaxBlocks: 2}, []string{"pointwise/64/4/0", "pointwise/64/4/0", "pointwise/64/4/0", "pointwise/64/1/0", "pointwise/64/1/0"}},
		// A decoding step's masked softmax over a query dimension of size
		// 1 (indexed by 0): a row reduction, not a thread a row.
		{"decode_softmax.mlir", togpu.DefaultConfig, []string{"row/256/1/8"}},
	}
	for _, tc := range tests {
		ctx, m := parse(t, tc.file)
		if err := togpu.Run(ctx, m, tc.cfg); err != nil {
			t.Fatal(err)
		}
		var got []string
		m.Walk(func(o *ir.Operation) bool {
			if gpu.IsKernel(o) {
				d := o.Attr(togpu.LaunchAttr).(ir.DictAttr)
				got = append(got, fmt.Sprintf("%s/%s/%s/%s", d.Get("mapping").(ir.StringAttr).Value,
					intAttr(d, "block"), intAttr(d, "vector"), intAttr(d, "rows_per_block")))
			}
			return true
		})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s with %+v: kernels' mapping/block/vector/rows (-want +got):\n%s", tc.file, tc.cfg, diff)
		}
	}
}

// TestLargeBlocksBoundRegisters checks that a kernel of more than 256
// threads a block carries its block size as nvvm.maxntid (PTX .maxntid,
// which caps the registers a thread may take so that the block can
// launch), and that one of 256 or fewer does not.
func TestLargeBlocksBoundRegisters(t *testing.T) {
	for _, tc := range []struct {
		file  string
		block int64
	}{
		{"elementwise.mlir", 1024}, {"elementwise.mlir", 512}, {"elementwise.mlir", 256},
		{"softmax.mlir", 1024}, {"softmax.mlir", 128},
	} {
		ctx, m := parse(t, tc.file)
		if err := togpu.Run(ctx, m, togpu.Config{Block: tc.block, Vector: 1, MaxBlocks: 8}); err != nil {
			t.Fatal(err)
		}
		kernels := 0
		m.Walk(func(o *ir.Operation) bool {
			if !gpu.IsKernel(o) {
				return true
			}
			kernels++
			block, _ := strconv.ParseInt(intAttr(o.Attr(togpu.LaunchAttr).(ir.DictAttr), "block"), 10, 64)
			got, ok := o.Attr("nvvm.maxntid").(ir.IntegerAttr)
			switch {
			case block > 256 && (!ok || got.Value != block):
				t.Errorf("%s, block %d: nvvm.maxntid %v, want %d", tc.file, block, o.Attr("nvvm.maxntid"), block)
			case block <= 256 && ok:
				t.Errorf("%s, block %d: nvvm.maxntid %d, want none", tc.file, block, got.Value)
			}
			return true
		})
		if kernels == 0 {
			t.Errorf("%s: no kernel", tc.file)
		}
	}
}

// TestRegisterRow checks that a static softmax row of 512 (16 elements
// per thread of a warp) is loaded once for its three passes and divides
// once per row.
func TestRegisterRow(t *testing.T) {
	ctx, m := parse(t, "softmax_static.mlir")
	if err := togpu.Run(ctx, m, togpu.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	m.Walk(func(o *ir.Operation) bool {
		if o.ParentOfType(gpu.FuncOp) != nil {
			name := o.Name()
			if name == "loop.load" && o.Operand(0).Type().(*ir.MemRefType).MemorySpace == nil {
				name = "global load"
			}
			counts[name]++
		}
		return true
	})
	want := map[string]int{"global load": 512 / 32, "arith.divf": 1, "loop.store": 512 / 32, "loop.for": 0}
	for name, n := range want {
		if counts[name] != n {
			t.Errorf("%d %s in the kernel, want %d\n%s", counts[name], name, n, m)
		}
	}
}

func intAttr(d ir.DictAttr, name string) string {
	return fmt.Sprint(d.Get(name).(ir.IntegerAttr).Value)
}

// TestErrors checks the located diagnostics of nests that cannot become
// kernels.
func TestErrors(t *testing.T) {
	tests := []struct{ body, want string }{
		{`%r = "loop.parallel"(%c0, %c4, %c1, %z) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    %v = "loop.load"(%x, %i) : (memref<4xf32>, index) -> f32
    "loop.reduce"(%v) ({
    ^bb0(%l: f32, %r: f32):
      %a = arith.addf %l, %r : f32
      "loop.yield"(%a) : (f32) -> ()
    }) : (f32) -> ()
  }) : (index, index, index, f32) -> f32`, "t.mlir:6:8: error: convert-loop-to-gpu: cannot map loop.parallel nest #0 of @main: it reduces into 1 value(s) returned to the host"},
		{`"loop.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %b = "loop.alloc"() : () -> memref<4xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index) -> ()`, "t.mlir:8:10: error: 'loop.alloc' cannot run inside a kernel"},
	}
	for _, tc := range tests {
		src := `func.func @main(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  ` + tc.body + `
  return
}
`
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		err = togpu.Run(ctx, m, togpu.DefaultConfig)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestOptions checks that bad launch parameters are rejected by name.
func TestOptions(t *testing.T) {
	for _, p := range []string{"convert-loop-to-gpu{block=48}", "convert-loop-to-gpu{vector=0}", "convert-loop-to-gpu{rows-per-block=64}"} {
		_, err := passes.Parse("builtin.module(" + p + ")")
		if err == nil {
			t.Errorf("%s: accepted", p)
		}
	}
}

// checkAgainstGraph runs the graph program src and its lowering m (whose
// @main takes buffers) in the interpreter on the same random inputs and
// fails unless the first results are equal element for element.
func checkAgainstGraph(t *testing.T, name, src string, m *ir.Operation) {
	t.Helper()
	checkAgainstGraphTol(t, name, src, m, 0)
}

// checkAgainstGraphTol is checkAgainstGraph with a relative tolerance (a
// row reduction across threads sums in another order).
func checkAgainstGraphTol(t *testing.T, name, src string, m *ir.Operation, rel float64) {
	t.Helper()
	g, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "graph.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := ir.NewSymTable(g).Lookup("main")
	ft, err := interp.FuncType(fn)
	if err != nil {
		t.Fatal(err)
	}
	args, err := interp.RandomInputs(ft, 11)
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.New(g).Call("main", args...)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]interp.Value, len(args))
	for i, a := range args {
		bufs[i] = interp.BufferFromTensor(a.(*interp.Tensor))
	}
	w := want[0].(*interp.Tensor).Float64s()
	for i, v := range run(t, m, bufs)[0].Float64s() {
		if math.Abs(v-w[i]) > rel*math.Abs(w[i]) {
			t.Fatalf("%s: element %d: %g, want %g", name, i, v, w[i])
		}
	}
}

// backendPTX compiles mod with the named PTX backend; ok is false when the
// backend is llc and LLVM's llc is not installed (the caller skips or goes
// on), and any other failure fails the test.
func backendPTX(t *testing.T, mod *llir.Module, backend string) (ptx string, ok bool) {
	t.Helper()
	be, err := nvptx.New(backend)
	if err != nil {
		t.Fatal(err)
	}
	ptx, err = be.Compile(mod, nvptx.Options{})
	if err != nil {
		if backend == "llc" {
			t.Logf("llc backend unavailable: %v", err)
			return "", false
		}
		t.Fatal(err)
	}
	return ptx, true
}
