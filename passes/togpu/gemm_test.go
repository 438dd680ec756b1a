package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// mmaCases are bf16 products the tensor-core mapping takes, at sizes that
// exercise its variants: tails in M, N and K (predicated copies and a
// guarded epilogue, by element pairs when N is even, else by element),
// exact tiles (neither), A stored [K, M] and B stored [N, K], each and
// both, batch dimensions, a dynamic M (index rather than i32 offsets),
// f16, and rows that do not start on 16 bytes (copied by 8-, 4-byte
// cp.async or plain loads: A stored [K, M] with M not a multiple of 8,
// K not a multiple of 8, 4 or 2, B stored [K, N] with an odd N).
var mmaCases = []struct {
	name    string
	args    string // the function's arguments
	result  string
	body    string
	kernels int // mma kernels expected
}{
	{"odd-bias-gelu", "%x: tensor<100x40xbf16>, %w: tensor<40x72xbf16>, %b: tensor<72xbf16>", "tensor<100x72xbf16>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<100x40xbf16>, tensor<40x72xbf16>) -> tensor<100x72xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<100x72xbf16>, tensor<72xbf16>) -> tensor<100x72xbf16>
  %r = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<100x72xbf16>) -> tensor<100x72xbf16>`, 1},
	{"exact-tiles", "%x: tensor<128x64xbf16>, %w: tensor<64x128xbf16>", "tensor<128x128xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<128x128xbf16>`, 1},
	{"k-tiles-and-tail", "%x: tensor<130x104xbf16>, %w: tensor<104x72xbf16>", "tensor<130x72xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<130x104xbf16>, tensor<104x72xbf16>) -> tensor<130x72xbf16>`, 1},
	// Nine k tiles of 64 and a tail: every stage is refilled while the
	// products of the other warpgroups run (the wgmma kernels' hazards).
	{"many-k-tiles", "%x: tensor<70x584xbf16>, %w: tensor<584x40xbf16>", "tensor<70x40xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<70x584xbf16>, tensor<584x40xbf16>) -> tensor<70x40xbf16>`, 1},
	{"k-tail", "%x: tensor<33x24xbf16>, %w: tensor<24x136xbf16>", "tensor<33x136xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<33x24xbf16>, tensor<24x136xbf16>) -> tensor<33x136xbf16>`, 1},
	{"b-transposed", "%x: tensor<130x40xbf16>, %w: tensor<20x40xbf16>", "tensor<130x20xbf16>", `
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<20x40xbf16>) -> tensor<40x20xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<130x40xbf16>, tensor<40x20xbf16>) -> tensor<130x20xbf16>`, 1},
	{"b-transposed-odd-n", "%x: tensor<70x24xbf16>, %w: tensor<21x24xbf16>, %b: tensor<21xbf16>", "tensor<70x21xbf16>", `
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<21x24xbf16>) -> tensor<24x21xbf16>
  %0 = "graph.matmul"(%x, %t) : (tensor<70x24xbf16>, tensor<24x21xbf16>) -> tensor<70x21xbf16>
  %r = "graph.add"(%0, %b) : (tensor<70x21xbf16>, tensor<21xbf16>) -> tensor<70x21xbf16>`, 1},
	{"a-transposed", "%x: tensor<40x136xbf16>, %w: tensor<40x72xbf16>", "tensor<136x72xbf16>", `
  %t = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<40x136xbf16>) -> tensor<136x40xbf16>
  %r = "graph.matmul"(%t, %w) : (tensor<136x40xbf16>, tensor<40x72xbf16>) -> tensor<136x72xbf16>`, 1},
	{"a-transposed-exact", "%x: tensor<64x128xbf16>, %w: tensor<64x128xbf16>", "tensor<128x128xbf16>", `
  %t = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<64x128xbf16>) -> tensor<128x64xbf16>
  %r = "graph.matmul"(%t, %w) : (tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<128x128xbf16>`, 1},
	{"a-transposed-unaligned", "%x: tensor<16x20xbf16>, %w: tensor<16x8xbf16>", "tensor<20x8xbf16>", `
  %t = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<16x20xbf16>) -> tensor<20x16xbf16>
  %r = "graph.matmul"(%t, %w) : (tensor<20x16xbf16>, tensor<16x8xbf16>) -> tensor<20x8xbf16>`, 1},
	{"k-12", "%x: tensor<20x12xbf16>, %w: tensor<12x8xbf16>", "tensor<20x8xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<20x12xbf16>, tensor<12x8xbf16>) -> tensor<20x8xbf16>`, 1},
	{"k-odd-n-odd-bias-relu", "%x: tensor<77x37xbf16>, %w: tensor<37x45xbf16>, %b: tensor<45xbf16>", "tensor<77x45xbf16>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<77x37xbf16>, tensor<37x45xbf16>) -> tensor<77x45xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<77x45xbf16>, tensor<45xbf16>) -> tensor<77x45xbf16>
  %r = "graph.relu"(%1) : (tensor<77x45xbf16>) -> tensor<77x45xbf16>`, 1},
	{"k-6-n-10", "%x: tensor<9x6xbf16>, %w: tensor<6x10xbf16>", "tensor<9x10xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<9x6xbf16>, tensor<6x10xbf16>) -> tensor<9x10xbf16>`, 1},
	{"f16-odd-bias-relu", "%x: tensor<70x40xf16>, %w: tensor<40x36xf16>, %b: tensor<36xf16>", "tensor<70x36xf16>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<70x40xf16>, tensor<40x36xf16>) -> tensor<70x36xf16>
  %1 = "graph.add"(%0, %b) : (tensor<70x36xf16>, tensor<36xf16>) -> tensor<70x36xf16>
  %r = "graph.relu"(%1) : (tensor<70x36xf16>) -> tensor<70x36xf16>`, 1},
	{"both-transposed", "%x: tensor<24x136xbf16>, %w: tensor<20x24xbf16>, %b: tensor<20xbf16>", "tensor<136x20xbf16>", `
  %tx = "graph.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<24x136xbf16>) -> tensor<136x24xbf16>
  %tw = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<20x24xbf16>) -> tensor<24x20xbf16>
  %0 = "graph.matmul"(%tx, %tw) : (tensor<136x24xbf16>, tensor<24x20xbf16>) -> tensor<136x20xbf16>
  %r = "graph.add"(%0, %b) : (tensor<136x20xbf16>, tensor<20xbf16>) -> tensor<136x20xbf16>`, 1},
	{"batched-a-transposed", "%x: tensor<2x3x16x24xbf16>, %w: tensor<2x3x16x40xbf16>", "tensor<2x3x24x40xbf16>", `
  %t = "graph.transpose"(%x) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<2x3x16x24xbf16>) -> tensor<2x3x24x16xbf16>
  %r = "graph.matmul"(%t, %w) : (tensor<2x3x24x16xbf16>, tensor<2x3x16x40xbf16>) -> tensor<2x3x24x40xbf16>`, 1},
	{"batched", "%x: tensor<2x3x20x16xbf16>, %w: tensor<2x3x16x24xbf16>", "tensor<2x3x20x24xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<2x3x20x16xbf16>, tensor<2x3x16x24xbf16>) -> tensor<2x3x20x24xbf16>`, 1},
	// Dimensions of size 1 are indexed by the constant 0 (matchMatmul's
	// indexes): a batch of one, and M = 1 with K = 1.
	{"batch-of-one", "%x: tensor<1x20x16xbf16>, %w: tensor<1x16x24xbf16>", "tensor<1x20x24xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<1x20x16xbf16>, tensor<1x16x24xbf16>) -> tensor<1x20x24xbf16>`, 1},
	{"m-one-k-one", "%x: tensor<1x1xbf16>, %w: tensor<1x24xbf16>", "tensor<1x24xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<1x1xbf16>, tensor<1x24xbf16>) -> tensor<1x24xbf16>`, 1},
	// The decomposed attention: its scores are an f32 product of the
	// widened q and k (graph.attention keeps them in f32), which
	// lower-to-loop reads from the bf16 buffers (passes/lower's
	// operandView), so both products are the tensor cores'.
	{"attention", "%q: tensor<2x2x24x16xbf16>, %k: tensor<2x2x24x16xbf16>, %v: tensor<2x2x24x16xbf16>", "tensor<2x2x24x16xbf16>", `
  %r = "graph.attention"(%q, %k, %v) : (tensor<2x2x24x16xbf16>, tensor<2x2x24x16xbf16>, tensor<2x2x24x16xbf16>) -> tensor<2x2x24x16xbf16>`, 2},
}

// tmaRows are the mmaCases whose operands' rows are 16-byte multiples
// apart, A stored [M, K]: the TMA tilings copy them with gpu.tma_load.
var tmaRows = map[string]bool{"odd-bias-gelu": true, "exact-tiles": true, "k-tiles-and-tail": true, "many-k-tiles": true,
	"k-tail": true, "b-transposed": true, "b-transposed-odd-n": true, "batched": true, "batch-of-one": true, "attention": true}

// TestMMASemantics runs each product before and after lowering to the
// gpu level with every tiling in the interpreter (which simulates
// cp.async, ldmatrix and mma.sync lane by lane) and checks that the mma
// mapping took its matmuls, with the tiling's block.
func TestMMASemantics(t *testing.T) {
	// Each case with one tiling and each tiling with one case, unless
	// STRATA_TEST_LONG asks for every pair (make test-long).
	run := testsize.Cover(len(mmaCases), len(togpu.MMATiles), nil)
	for j, tile := range togpu.MMATiles {
		pipeline := mmaPipeline(tile)
		for i, tc := range mmaCases {
			if !run(i, j) {
				continue
			}
			t.Run(tile.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				p := &passtest.Program{Func: "main", Source: fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.body, tc.result)}
				// A wgmma tiling leaves products whose A is stored [K, M]
				// to the default mma.sync tiling.
				used := tile
				aKFirst := strings.Contains(tc.name, "a-transposed") || tc.name == "both-transposed"
				if tile.WGMMA && aKFirst {
					used = togpu.MMATiles[0]
				}
				// A TMA tiling leaves products whose rows TMA cannot
				// address to the same tile's one-role kernel.
				if used.TMA && !strings.Contains(lowerText(t, p, pipeline), `"gpu.tma_load"`) {
					if tmaRows[tc.name] {
						t.Errorf("no gpu.tma_load for rows of 16-byte multiples")
					}
					used = used.ConvTile()
				}
				if got := mmaKernels(t, p, pipeline, 32*used.Warps()); got != tc.kernels {
					t.Errorf("%d mma kernels, want %d", got, tc.kernels)
				}
				if tile.WGMMA {
					text := lowerText(t, p, pipeline)
					if got := strings.Contains(text, `"gpu.wgmma"`); got == aKFirst {
						t.Errorf("gpu.wgmma in the kernels: %v, want %v", got, !aKFirst)
					}
				}
				if err := passtest.CheckSemantics(p, pipeline, 1); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// mmaPipeline is lower-to-gpu with the mma kernels tiled by tile.
func mmaPipeline(tile togpu.MMATile) string {
	return fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{mma-tile=%s},canonicalize,cse)", tile)
}

// lowerText runs pipeline on p and returns the result's text.
func lowerText(t *testing.T, p *passtest.Program, pipeline string) string {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := p.Parse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	return ir.Sprint(m, ir.PrintOptions{})
}

// mmaKernels lowers p to the gpu level with pipeline and counts its mma
// kernels, each of which must have block threads.
func mmaKernels(t *testing.T, p *passtest.Program, pipeline string, block int64) int {
	t.Helper()
	text := lowerText(t, p, pipeline)
	n := strings.Count(text, `mapping = "mma"`)
	if want := fmt.Sprintf(`block = %d : i64, mapping = "mma"`, block); n > 0 && strings.Count(text, want) != n {
		t.Errorf("mma kernels without %q:\n%s", want, text)
	}
	return n
}

// TestMMATiles checks the tilings' table: each is valid, fits a block's
// shared memory, and is found by its name; other names and tilings the
// generator cannot build are rejected.
func TestMMATiles(t *testing.T) {
	if togpu.DefaultConfig.MMATile != togpu.MMATiles[0] {
		t.Errorf("default tiling %s, want %s", togpu.DefaultConfig.MMATile, togpu.MMATiles[0])
	}
	for _, tile := range togpu.MMATiles {
		got, err := togpu.ParseMMATile(tile.String())
		if err != nil || got != tile {
			t.Errorf("ParseMMATile(%q) = %v, %v", tile, got, err)
		}
		if tile.SharedBytes() > gpu.MaxSharedBytes {
			t.Errorf("%s: %d bytes of shared memory", tile, tile.SharedBytes())
		}
		if _, err := passes.Parse(mmaPipeline(tile)); err != nil {
			t.Errorf("%s: %v", tile, err)
		}
	}
	if _, err := togpu.ParseMMATile("128x128x16s3"); err == nil {
		t.Error("ParseMMATile accepted a name not in the table")
	}
	for _, bad := range []togpu.MMATile{
		{M: 256, N: 256, K: 64, Stages: 4, WarpN: 64}, // 256 KiB
		{M: 128, N: 128, K: 32, Stages: 1, WarpN: 32},
		{M: 96, N: 128, K: 32, Stages: 2, WarpN: 32},
		{M: 128, N: 128, K: 16, Stages: 2, WarpN: 32},
		{M: 128, N: 128, K: 32, Stages: 2, WarpN: 16},
		{M: 128, N: 32, K: 32, Stages: 2, WarpN: 64},
		{M: 512, N: 512, K: 32, Stages: 2, WarpN: 32},                                                            // 128 warps
		{M: 64, N: 1024, K: 32, Stages: 2, WarpN: 32},                                                            // 1024 threads, 64 rows of A of 4 chunks: no whole pass
		{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, TMA: true},                                               // TMA copies need the producer warpgroup
		{M: 128, N: 128, K: 64, Stages: 3, WarpN: 32, TMA: true},                                                 // and wgmma
		{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, Cluster: 2},                           // clusters multicast by TMA
		{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Cluster: 2, Persistent: 3}, // on whole clusters
		{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Cluster: 4},                // of 2 blocks
	} {
		cfg := togpu.DefaultConfig
		cfg.MMATile = bad
		if err := togpu.Run(dialects.NewContext(), nil, cfg); err == nil || !strings.Contains(err.Error(), "mma tile") {
			t.Errorf("%s: got %v, want an mma tile error", bad, err)
		}
	}
}

// TestMMADynamicShared checks that a tiling whose stages exceed 48 KiB
// launches its kernel with their size as dynamic shared memory, and one
// within it with none.
func TestMMADynamicShared(t *testing.T) {
	p := &passtest.Program{Func: "main", Source: `func.func @main(%x: tensor<100x40xbf16>, %w: tensor<40x72xbf16>) -> tensor<100x72xbf16> {
  %r = "graph.matmul"(%x, %w) : (tensor<100x40xbf16>, tensor<40x72xbf16>) -> tensor<100x72xbf16>
  return %r : tensor<100x72xbf16>
}
`}
	for _, tile := range togpu.MMATiles {
		text := lowerText(t, p, mmaPipeline(tile))
		want := fmt.Sprintf("arith.constant %d : i32", tile.SharedBytes())
		dynamic := strings.Contains(text, "dynamic_shared_memory_size") && strings.Contains(text, want)
		if dynamic != (tile.SharedBytes() > gpu.MaxStaticSharedBytes) {
			t.Errorf("%s (%d bytes): dynamic shared memory %v in\n%s", tile, tile.SharedBytes(), dynamic, text)
		}
	}
}

// mlpLoss is a two-layer MLP's loss, as bench's mlp_train: its gradient
// has five products, h = x·w1 and y = h·w2 (A [M, K], B [K, N]),
// dW2 = hᵀ·dy and dW1 = xᵀ·dh (A stored [K, M]) and dh = dy·w2ᵀ (B
// stored [N, K]).
const mlpLoss = `func.func @loss(%x: tensor<40x24xbf16>, %w1: tensor<24x48xbf16>, %w2: tensor<48x24xbf16>) -> tensor<f32> {
  %0 = "graph.matmul"(%x, %w1) : (tensor<40x24xbf16>, tensor<24x48xbf16>) -> tensor<40x48xbf16>
  %1 = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<40x48xbf16>) -> tensor<40x48xbf16>
  %2 = "graph.matmul"(%1, %w2) : (tensor<40x48xbf16>, tensor<48x24xbf16>) -> tensor<40x24xbf16>
  %3 = "graph.cast"(%2) : (tensor<40x24xbf16>) -> tensor<40x24xf32>
  %4 = "graph.mul"(%3, %3) : (tensor<40x24xf32>, tensor<40x24xf32>) -> tensor<40x24xf32>
  %5 = "graph.reduce_mean"(%4) <{axes = [0, 1], keepdims = false}> : (tensor<40x24xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}
`

// TestMMATrainingStep checks that every product of an MLP's gradient,
// forward and backward, runs on tensor cores, and that the lowered
// gradient computes what the graph does.
func TestMMATrainingStep(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, mlpLoss, ir.ParseOptions{Filename: "mlp.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := ir.NewSymTable(m).Lookup("loss")
	if _, err := autodiff.Grad(ctx, fn, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	ir.NewSymTable(m).Erase(fn)
	p := &passtest.Program{Func: "loss_grad", Source: ir.Sprint(m, ir.PrintOptions{Generic: true})}
	if got := mmaKernels(t, p, "builtin.module(lower-to-gpu)", 256); got != 5 {
		t.Errorf("%d mma kernels, want 5", got)
	}
	if err := passtest.CheckSemantics(p, "builtin.module(lower-to-gpu)", 1); err != nil {
		t.Error(err)
	}
}

// TestMMADynamicShapes checks that a graph matmul with a dynamic M (whose
// loads go through convert-graph-to-loop's unit-broadcast selects) takes
// the mma mapping, with B stored transposed also with a dynamic N, and
// computes what the graph program computes at several sizes, 1 (where
// the selects pick 0) and an empty N included; a dynamic N read along rows of B [K, N]
// (no static 16-byte row stride for cp.async) keeps the SIMT mapping.
func TestMMADynamicShapes(t *testing.T) {
	for _, tc := range []struct {
		name, args, result, body string
		kernels                  int
		sizes                    [][]int64 // per call, the argument shapes
	}{
		{"dynamic-m-bias-relu", "%x: tensor<?x40xbf16>, %w: tensor<40x24xbf16>, %b: tensor<24xbf16>", "tensor<?x24xbf16>", `
  %0 = "graph.matmul"(%x, %w) : (tensor<?x40xbf16>, tensor<40x24xbf16>) -> tensor<?x24xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<?x24xbf16>, tensor<24xbf16>) -> tensor<?x24xbf16>
  %r = "graph.relu"(%1) : (tensor<?x24xbf16>) -> tensor<?x24xbf16>`, 1,
			[][]int64{{1, 40}, {40, 24}, {24}, {130, 40}, {40, 24}, {24}, {7, 40}, {40, 24}, {24}}},
		{"dynamic-m-n-b-transposed", "%x: tensor<?x16xbf16>, %w: tensor<?x16xbf16>", "tensor<?x?xbf16>", `
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<?x16xbf16>) -> tensor<16x?xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<?x16xbf16>, tensor<16x?xbf16>) -> tensor<?x?xbf16>`, 1,
			[][]int64{{1, 16}, {9, 16}, {33, 16}, {1, 16}, {20, 16}, {70, 16}, {5, 16}, {0, 16}}},
		{"dynamic-n", "%x: tensor<8x16xbf16>, %w: tensor<16x?xbf16>", "tensor<8x?xbf16>", `
  %r = "graph.matmul"(%x, %w) : (tensor<8x16xbf16>, tensor<16x?xbf16>) -> tensor<8x?xbf16>`, 0,
			[][]int64{{8, 16}, {16, 24}}},
	} {
		// The default tiling, and the TMA tilings (their tensor maps
		// sized from the buffers at each launch), the staged epilogue's
		// with a dynamic M (and the plain one with a dynamic N).
		staged := tmaTile
		staged.Staged = true
		for _, tile := range []togpu.MMATile{togpu.DefaultConfig.MMATile, tmaTile, staged} {
			t.Run(tile.String()+"/"+tc.name, func(t *testing.T) {
				src := fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.body, tc.result)
				p := &passtest.Program{Func: "main", Source: src}
				pipeline := mmaPipeline(tile)
				if got := mmaKernels(t, p, pipeline, 32*tile.Warps()); got != tc.kernels {
					t.Errorf("%d mma kernels, want %d", got, tc.kernels)
				}
				ctx := dialects.NewContext()
				g, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "dyn.mlir"})
				if err != nil {
					t.Fatal(err)
				}
				m := lowerGraph(t, src, pipeline)
				if text := ir.Sprint(m, ir.PrintOptions{}); tile.TMA && tc.kernels > 0 && !strings.Contains(text, `"gpu.tma_load"`) {
					t.Error("the TMA tiling copies a dynamic M with cp.async")
				}
				nargs := strings.Count(tc.args, "%")
				rng := rand.New(rand.NewPCG(5, uint64(nargs)))
				for call := 0; call+nargs <= len(tc.sizes); call += nargs {
					var args, bufs []interp.Value
					for _, shape := range tc.sizes[call : call+nargs] {
						x := randomBF16(t, rng, shape)
						args = append(args, x)
						bufs = append(bufs, interp.BufferFromTensor(x))
					}
					want, err := interp.New(g).Call("main", args...)
					if err != nil {
						t.Fatal(err)
					}
					got, err := interp.New(m).Call("main", bufs...)
					if err != nil {
						t.Fatalf("sizes %v: %v", tc.sizes[call:call+nargs], err)
					}
					gt, err := got[0].(*interp.Buffer).Tensor()
					if err != nil {
						t.Fatal(err)
					}
					wt := want[0].(*interp.Tensor)
					if !slices.Equal(gt.Shape(), wt.Shape()) {
						t.Fatalf("sizes %v: shape %v, want %v", tc.sizes[call:call+nargs], gt.Shape(), wt.Shape())
					}
					gs, ws := gt.Float64s(), wt.Float64s()
					for i := range ws {
						if d := math.Abs(gs[i] - ws[i]); !(d <= math.Max(1, math.Abs(ws[i]))/128) {
							t.Fatalf("sizes %v: element %d: %g, want %g", tc.sizes[call:call+nargs], i, gs[i], ws[i])
						}
					}
				}
			})
		}
	}
}

// tmaTile is the warp-specialized tiling whose producer copies with TMA,
// and clusterTile the same in clusters of two blocks sharing B's tile.
var (
	tmaTile     = togpu.MMATile{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true}
	clusterTile = togpu.MMATile{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Cluster: 2}
)

// TestMMABroadcastKept checks that a select that really broadcasts (a
// row of A repeated over an M taken from another buffer) is not read as
// the induction variable: the nest keeps the SIMT mapping.
func TestMMABroadcastKept(t *testing.T) {
	src := `func.func @main(%a: memref<?x16xbf16>, %b: memref<16x8xbf16>, %c: memref<?x8xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %m = "loop.dim"(%c) <{index = 0 : i64}> : (memref<?x8xbf16>) -> index
  %ma = "loop.dim"(%a) <{index = 0 : i64}> : (memref<?x16xbf16>) -> index
  %zero = arith.constant 0.0 : f32
  "loop.parallel"(%c0, %c0, %m, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %one = arith.cmpi eq, %ma, %c1 : index
    %ia = arith.select %one, %c0, %i : index
    %s = "loop.for"(%c0, %c16, %c1, %zero) ({
    ^bb0(%k: index, %acc: f32):
      %x = "loop.load"(%a, %ia, %k) : (memref<?x16xbf16>, index, index) -> bf16
      %y = "loop.load"(%b, %k, %j) : (memref<16x8xbf16>, index, index) -> bf16
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %t = arith.addf %acc, %p : f32
      "loop.yield"(%t) : (f32) -> ()
    }) : (index, index, index, f32) -> f32
    %r = arith.truncf %s : f32 to bf16
    "loop.store"(%r, %c, %i, %j) : (bf16, memref<?x8xbf16>, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return
}`
	p := &passtest.Program{Func: "main", Source: src}
	if n := mmaKernels(t, p, "builtin.module(convert-loop-to-gpu,canonicalize,cse)", 32*togpu.DefaultConfig.MMATile.Warps()); n != 0 {
		t.Errorf("%d mma kernels for a broadcast row of A, want 0", n)
	}
}

// TestGEMMBounds checks checkGEMM's bound without a device: it admits a
// correct result summed in another order where a product near a bf16
// tie rounds the other way and a bias cancels half of it (TestGPUMMADynamic's
// failure in session 14, made exact), and rejects results with a product
// term left out or the bias read at the wrong column.
func TestGEMMBounds(t *testing.T) {
	const tie = `func.func @main(%x: tensor<1x3xbf16>, %w: tensor<3x1xbf16>, %b: tensor<1xbf16>) -> tensor<1x1xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<1x3xbf16>, tensor<3x1xbf16>) -> tensor<1x1xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<1x1xbf16>, tensor<1xbf16>) -> tensor<1x1xbf16>
  %r = "graph.relu"(%1) : (tensor<1x1xbf16>) -> tensor<1x1xbf16>
  return %r : tensor<1x1xbf16>
}`
	// The products 1.5 · 1.859375 = 2.7890625, a bf16 tie, and twice
	// 2⁻²³, half an f32 ulp there: summed in order they round to the
	// tie and then down to even, 2.78125; the small ones first, the sum
	// is above the tie and rounds up to 2.796875.
	bf := func(shape []int64, vs ...float64) interp.Value {
		x, err := interp.FromFloat64s(ir.BF16, shape, vs)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	args := []interp.Value{bf([]int64{1, 3}, 1.5, 0x1p-12, 0x1p-12), bf([]int64{3, 1}, 1.859375, 0x1p-11, 0x1p-11), bf([]int64{1}, -1.4921875)}
	want := graphResult(t, tie, args)
	if want[0] != 1.2890625 {
		t.Fatalf("the interpreter gives %g, want 2.78125 − 1.4921875", want[0])
	}
	other := []float64{1.3046875} // 2.796875 − 1.4921875
	if d := other[0] - want[0]; d <= 1.3046875/128 {
		t.Fatalf("the case does not exceed one output ulp (%g)", d)
	}
	if bad, _ := outOfBounds(other, want, gemmBounds(t, tie, "main", args, want)); len(bad) > 0 {
		t.Errorf("the bound rejects the other rounding of a tie")
	}

	src := `func.func @main(%x: tensor<64x72xbf16>, %w: tensor<72x40xbf16>, %b: tensor<40xbf16>) -> tensor<64x40xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<64x72xbf16>, tensor<72x40xbf16>) -> tensor<64x40xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<64x40xbf16>, tensor<40xbf16>) -> tensor<64x40xbf16>
  %r = "graph.relu"(%1) : (tensor<64x40xbf16>) -> tensor<64x40xbf16>
  return %r : tensor<64x40xbf16>
}`
	rng := rand.New(rand.NewPCG(15, 1))
	x, w, b := randomBF16(t, rng, []int64{64, 72}), randomBF16(t, rng, []int64{72, 40}), randomBF16(t, rng, []int64{40})
	want = graphResult(t, src, []interp.Value{x, w, b})
	tol := gemmBounds(t, src, "main", []interp.Value{x, w, b}, want)
	xs, ws, bs := x.Float64s(), w.Float64s(), b.Float64s()
	// result computes the graph's roundings on f64 sums (exact here) of
	// the first k products, adding the bias of column shift(c).
	result := func(k int, shift func(int) int) []float64 {
		out := make([]float64, len(want))
		for i := range out {
			r, c := i/40, i%40
			p := 0.0
			for j := range k {
				p += xs[r*72+j] * ws[j*40+c]
			}
			out[i] = max(0, roundBF16(float32(roundBF16(float32(p))+bs[shift(c)])))
		}
		return out
	}
	same := func(c int) int { return c }
	if bad, worst := outOfBounds(result(72, same), want, tol); len(bad) > 0 {
		t.Errorf("the exact sums are out of bounds at %d elements", len(bad))
	} else {
		t.Logf("exact sums: largest difference %.2f of the bound", worst)
	}
	for name, got := range map[string][]float64{
		"a product term left out": result(71, same),
		"the bias's next column":  result(72, func(c int) int { return (c + 1) % 40 }),
	} {
		// Where relu zeroes both, nothing can tell; most others must fail.
		// (Seed 15: 1060 and 1194 of 2560.)
		if bad, _ := outOfBounds(got, want, tol); len(bad) < len(want)/4 {
			t.Errorf("%s: only %d of %d elements out of bounds", name, len(bad), len(want))
		}
	}
}

// graphResult returns the interpreter's result of main in src on args.
func graphResult(t *testing.T, src string, args []interp.Value) []float64 {
	t.Helper()
	m, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "gemm.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := interp.New(m).Call("main", args...)
	if err != nil {
		t.Fatal(err)
	}
	return r[0].(*interp.Tensor).Float64s()
}
